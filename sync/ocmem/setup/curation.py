"""The weekly curation and quarterly review routines: prepared, printed, never scheduled by ocmem.

Curation is an `opencode run` of the shipped prompt (prompts/curation-hebdomadaire.md): the model
merges duplicate proposals, proposes recurring lessons and archives old entries, through ocmem's
commands and tools, so every rule still applies and the plugin still blocks writes to skills/ and
MEMORY.md. The quarterly review is `ocmem review`, deterministic, suggestions only.
"""

from __future__ import annotations

import shlex

from ocmem.home.settings import Settings
from ocmem.setup.install import data_root
from ocmem.setup.schedule import command, cron_escape


def prompt_path() -> str:
    return str(data_root() / "prompts" / "curation-hebdomadaire.md")


def curation_plan(settings: Settings) -> str:
    home = shlex.quote(str(settings.paths.home))
    prompt = shlex.quote(prompt_path())
    state = settings.paths.state_dir
    curation = f"cd {home} && opencode run < {prompt}"
    review = command(settings, "review")
    return "\n".join(
        [
            "Curation hebdomadaire (préparée, non activée) : fusion des doublons de pending.md,",
            "propositions pour les leçons récurrentes, archivage des entrées de plus de 90 jours.",
            "Jamais d'écriture dans skills/ ni MEMORY.md ; rien n'est supprimé.",
            f"  {curation}",
            "",
            "Revue trimestrielle (préparée, non activée) : skills peu utilisés, contradictions",
            "possibles, faits à revalider ; suggestions seulement.",
            f"  {review}",
            "",
            "Pour les activer, ajoute à la crontab (crontab -e) les lignes ci-dessous, décommentées :",
            "# 0 7 * * 1 "
            + cron_escape(f"{curation} >> {shlex.quote(str(settings.paths.curation_log))} 2>&1"),
            "# 0 8 1 1,4,7,10 * "
            + cron_escape(f"{review} > {shlex.quote(str(state))}/revue-$(date +%Y-%m).md 2>&1"),
        ]
    )
