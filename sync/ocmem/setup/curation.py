"""The weekly curation and quarterly review routines: prepared, never scheduled unless asked.

Curation is an `opencode run` of the shipped prompt (prompts/curation-hebdomadaire.md): the model
merges duplicate proposals, proposes recurring lessons and archives old entries, through ocmem's
commands and tools, so every rule still applies and the plugin still blocks writes to skills/ and
MEMORY.md. The quarterly review is `ocmem review`, deterministic, suggestions only.

``ocmem curate --print`` shows both commands as ``ocmem cron install --job curation --job review``
would schedule them (``ocmem.setup.schedule``: absolute paths, the prompt copied into the home);
it writes nothing.
"""

from __future__ import annotations

from ocmem.home.settings import Settings
from ocmem.setup.schedule import (
    absolute,
    cli_for,
    curation_command,
    review_command,
    which_opencode,
)


def curation_plan(settings: Settings) -> str:
    settings = absolute(settings)
    opencode = which_opencode()
    cli = cli_for(settings.paths.home)
    missing = (
        [
            "  ⚠ opencode introuvable dans le PATH : à l'installation, --opencode /chemin/vers/opencode"
        ]
        if opencode is None
        else []
    )
    return "\n".join(
        [
            "Curation hebdomadaire (préparée, non activée) : fusion des doublons de pending.md,",
            "propositions pour les leçons récurrentes, archivage des entrées de plus de 90 jours.",
            "Jamais d'écriture dans skills/ ni MEMORY.md ; rien n'est supprimé.",
            f"  {curation_command(settings, opencode or 'opencode')}",
            *missing,
            "",
            "Revue trimestrielle (préparée, non activée) : skills peu utilisés, contradictions",
            "possibles, faits à revalider ; suggestions seulement.",
            f"  {review_command(settings)}",
            "",
            f"Pour les activer (lundi 7 h, et le 1er de chaque trimestre à 8 h) : {cli} cron install "
            "--tache curation --tache review",
            f"(le prompt est alors copié dans {settings.paths.curation_prompt} ; chaque chemin est "
            "absolu, cron n'ayant ni ton PATH ni ton dossier courant).",
            f"Pour les arrêter : {cli} cron remove --tache curation --tache review",
        ]
    )
