"""« Ce qu'il te reste à faire » : what ``ocmem init`` cannot do for the user (a secret to paste,
a scheduler to allow, a Unix user to create, pages in SilverBullet to write), each item with the
command or the gesture that does it. ``ocmem init`` ends with this list and ``ocmem doctor``
checks it again, so an item leaves the list the day it is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ocmem.home.settings import Settings
from ocmem.home.space import ENV_TOKEN, is_configured, loose_mode, sync_section, token_file_path
from ocmem.setup.setupchecks import SpaceSeen


@dataclass(frozen=True)
class Todo:
    what: str
    how: str


def remaining(
    settings: Settings, env: Mapping[str, str], space: SpaceSeen | None = None
) -> list[Todo]:
    """What is left for the user, in the order a first hour takes it (``space``: what doctor saw
    of the SilverBullet pages; init does not look, and lists them while sync is configured)."""
    from ocmem.setup import schedule

    paths = settings.paths
    todo: list[Todo] = []
    synced = is_configured(settings, env)
    if not synced:
        todo.append(
            Todo(
                "relier SilverBullet (facultatif : sans lui, la mémoire reste locale et tu "
                "valides dans memory/pending.md)",
                f"ajoute `silverbullet:` puis `url: https://…` à {paths.config_file}, mets le "
                f"jeton du serveur dans {paths.default_token_file} (mode 600), puis `ocmem pull`",
            )
        )
    token_file = token_file_path(settings, sync_section(settings), env)
    if synced and not token_file.exists() and not env.get(ENV_TOKEN):
        todo.append(
            Todo(
                f"le jeton SilverBullet (SB_AUTH_TOKEN du serveur) dans {token_file}",
                f"`install -m 600 /dev/null {token_file}` puis colle le jeton dedans "
                "(jamais dans ocmem.yaml ni dans l'environnement d'OpenCode)",
            )
        )
    elif token_file.exists() and loose_mode(token_file) is not None:
        todo.append(Todo(f"{token_file} est lisible par d'autres", f"chmod 600 {token_file}"))
    missing = []
    if synced and (space is None or space.rules_with_section is not True):
        missing.append(
            "ta page Agents/AGENTS.md avec la section « Mémoire et apprentissage » (sinon ocmem "
            "l'ajoute à la copie locale à chaque pull)"
        )
    if synced and (space is None or space.library_page is not True):
        missing.append("la page de revue Library/ocmem (valider, refuser, retirer)")
    if missing:
        todo.append(
            Todo(
                "dans SilverBullet : " + " ; ".join(missing),
                "`ocmem init --voir-section` et `ocmem init --voir-bibliotheque` les affichent ; "
                "colle-les, puis « System: Reload » et `ocmem doctor`",
            )
        )
    if not schedule.scheduled_jobs(paths.home):
        cli = f"ocmem --home {paths.home} cron install"
        todo.append(
            Todo(
                "les tâches régulières : "
                + (
                    "push/pull vers SilverBullet, et si tu veux la curation hebdomadaire"
                    if synced
                    else "la curation hebdomadaire et la revue trimestrielle"
                ),
                (
                    f"`{cli}` (ajoute `--tache curation --tache review` pour les routines)"
                    if synced
                    else f"`{cli} --tache curation --tache review`"
                )
                + " : une ligne par dossier, chemins absolus ; `cron remove` les retire",
            )
        )
    if not paths.hardened_file.exists():
        todo.append(
            Todo(
                "le mode durci (recommandé sur un VPS : l'agent, même avec un shell, ne peut "
                "plus modifier AGENTS.md, MEMORY.md ni skills/)",
                "`sudo useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin ocmem` "
                f"puis `sudo ocmem --home {paths.home} harden --agent $USER --proprietaire ocmem` "
                "(docs/security.md ; `harden --annuler` l'annule)",
            )
        )
    return todo


def render(todo: list[Todo]) -> list[str]:
    if not todo:
        return ["Ce qu'il te reste à faire : rien, tout est en place."]
    lines = ["Ce qu'il te reste à faire (ocmem doctor le revérifie) :"]
    for number, item in enumerate(todo, 1):
        lines += [f"  {number}. {item.what}", f"     → {item.how}"]
    return lines
