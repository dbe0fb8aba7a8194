"""What the hardened gate cannot see: SilverBullet settings given as environment variables.

In the hardened mode the plugin starts the gate through sudo (``ocmem harden``), and sudo starts
it with a clean environment: the ``OCMEM_SILVERBULLET_*`` variables of OpenCode's environment,
which the README offers beside ocmem.yaml, never reach it — the gate then syncs nothing and
says nothing. Each variable is decided once, here, and the same decision is used by ``ocmem
harden`` (it carries or refuses before changing anything), by the gate at the session start (the
plugin tells it which variables OpenCode has: ``plugin-config``) and by ``ocmem doctor``:

- ``OCMEM_SILVERBULLET_URL`` is **carried**: ``harden`` writes it into ocmem.yaml
  (``silverbullet.url``), the owner's file, where the gate reads it, and says so; a different URL
  already there is refused (ocmem cannot tell which one the user means);
- ``OCMEM_SILVERBULLET_TOKEN_FILE``: the default token file needs nothing; another file under
  ``.ocmem/`` is carried as ``silverbullet.token_file`` (``harden`` makes it the owner's, 0600);
  a file anywhere else is refused: in the home ``harden`` would make it readable by all, and
  outside it the agent's file is the agent's to read, not the owner's;
- ``OCMEM_SILVERBULLET_TOKEN`` is **refused**: a token in OpenCode's environment is in every shell
  the model runs; only a file of the owner's (0600) keeps it from the agent.

Why the gate never takes them from the plugin instead: the URL decides where the token goes, and
the token is the owner's; neither may come from the agent's side of the boundary.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ocmem.home.paths import Paths
from ocmem.home.space import ENV_TOKEN, ENV_TOKEN_FILE, ENV_URL

VARIABLES = (ENV_URL, ENV_TOKEN_FILE, ENV_TOKEN)  # what the plugin reports, by name
SAME, CARRY, REFUSE = "same", "carry", "refuse"
MASKED = "***"  # the token's value, as the plugin reports it: only that it is set


class Decision(NamedTuple):
    variable: str
    action: str  # SAME: ocmem.yaml already says it; CARRY: harden writes it there; REFUSE
    key: str  # the key of ocmem.yaml's `silverbullet` section it maps to
    value: str  # what goes there (CARRY), or what the variable says (never the token)
    why: str  # in French: what goes wrong (CARRY, REFUSE)
    fix: str  # in French: what to do


def _url(value: str) -> str:
    return value.strip().rstrip("/").removesuffix("/.fs").rstrip("/")


def decide(env: Mapping[str, str], section: Mapping[str, Any], paths: Paths) -> list[Decision]:
    """Each ``OCMEM_SILVERBULLET_*`` variable set in ``env``, decided against ocmem.yaml's
    ``silverbullet`` ``section`` for the hardened gate of ``paths``' home."""
    found = []
    where = paths.config_file
    url = _url(env.get(ENV_URL, ""))
    if url:
        held = _url(str(section.get("url") or ""))
        if held == url:
            found.append(Decision(ENV_URL, SAME, "url", url, "", ""))
        elif held:
            found.append(
                Decision(
                    ENV_URL,
                    REFUSE,
                    "url",
                    url,
                    f"{ENV_URL} ({url}) et `silverbullet.url` de {where} ({held}) diffèrent : la "
                    "passerelle du mode durci ne lit que ocmem.yaml",
                    f"garde-en un : corrige `silverbullet.url` dans {where}, ou retire {ENV_URL} "
                    "de l'environnement d'OpenCode",
                )
            )
        else:
            found.append(
                Decision(
                    ENV_URL,
                    CARRY,
                    "url",
                    url,
                    f"{ENV_URL} ({url}) est dans l'environnement d'OpenCode, mais la passerelle "
                    "du mode durci, lancée par sudo, ne le voit pas : rien n'est synchronisé",
                    f"écris-le dans {where} (`silverbullet:` puis `url: {url}`), ce que fait "
                    f"`sudo env {ENV_URL}={url} ocmem --home {paths.home} harden --agent <compte "
                    "d'OpenCode>`",
                )
            )
    token_file = env.get(ENV_TOKEN_FILE, "").strip()
    if token_file:
        found.append(_token_file(token_file, section, paths))
    if env.get(ENV_TOKEN, "").strip():
        found.append(
            Decision(
                ENV_TOKEN,
                REFUSE,
                "token_file",
                "",
                f"{ENV_TOKEN} est dans l'environnement d'OpenCode : la passerelle du mode durci "
                "ne le voit pas, et chaque shell du modèle peut le lire",
                f"écris le jeton dans {paths.default_token_file} (une ligne ; `ocmem harden` le "
                f"rend 0600 au propriétaire), puis retire {ENV_TOKEN} de l'environnement "
                "d'OpenCode",
            )
        )
    return found


def _token_file(value: str, section: Mapping[str, Any], paths: Paths) -> Decision:
    path = Path(os.path.abspath(os.path.expanduser(value)))
    held = section.get("token_file")
    held_path = (
        Path(os.path.abspath(paths.home / os.path.expanduser(str(held))))
        if held
        else paths.default_token_file
    )
    state = paths.state_dir
    if path == held_path:
        return Decision(ENV_TOKEN_FILE, SAME, "token_file", str(path), "", "")
    move = (
        f"install -m 600 {path} {paths.default_token_file}, puis retire {ENV_TOKEN_FILE} de "
        "l'environnement d'OpenCode" + (f" et `token_file` de {paths.config_file}" if held else "")
    )
    if state not in path.parents:
        inside = paths.home in path.parents
        return Decision(
            ENV_TOKEN_FILE,
            REFUSE,
            "token_file",
            str(path),
            f"{ENV_TOKEN_FILE} ({path}) : la passerelle du mode durci ne voit pas la variable, "
            + (
                "et ce fichier du dossier deviendrait lisible par tous en mode durci"
                if inside
                else "et ce fichier, hors du dossier, est lisible par l'agent, pas par le "
                "propriétaire"
            ),
            move,
        )
    if held:
        return Decision(
            ENV_TOKEN_FILE,
            REFUSE,
            "token_file",
            str(path),
            f"{ENV_TOKEN_FILE} ({path}) et `silverbullet.token_file` de {paths.config_file} "
            f"({held}) diffèrent : la passerelle du mode durci ne lit que ocmem.yaml",
            f"garde-en un : corrige `token_file` dans {paths.config_file}, ou retire "
            f"{ENV_TOKEN_FILE} de l'environnement d'OpenCode",
        )
    rel = path.relative_to(paths.home).as_posix()
    return Decision(
        ENV_TOKEN_FILE,
        CARRY,
        "token_file",
        rel,
        f"{ENV_TOKEN_FILE} ({path}) est dans l'environnement d'OpenCode, mais la passerelle du "
        "mode durci, lancée par sudo, ne le voit pas : elle lirait un autre fichier",
        f"écris-le dans {paths.config_file} (`silverbullet:` puis `token_file: {rel}`), ce que "
        f"fait `sudo env {ENV_TOKEN_FILE}={path} ocmem --home {paths.home} harden --agent "
        "<compte d'OpenCode>`",
    )


def unseen(reported: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The variables the plugin reports that this process does not see as it does (the gate
    started by sudo sees none of them; a gate started by the plugin itself, all)."""
    found = {}
    for name in VARIABLES:
        value = reported.get(name, "")
        if not isinstance(value, str) or not value:
            continue
        if name == ENV_TOKEN and own.get(name):
            continue  # reported masked: set on both sides
        if own.get(name) != value:
            found[name] = value
    return found


def with_setting(text: str, key: str, value: str) -> str | None:
    """ocmem.yaml's ``text`` with ``silverbullet.<key>: value``, every other byte kept (a line
    added under the section, or the section added at the end); None when the file's layout
    is one this cannot extend safely (the caller refuses, naming the line to write)."""
    import yaml

    line = f"  {key}: {json.dumps(value, ensure_ascii=False)}"
    lines = text.split("\n")
    header = [i for i, raw in enumerate(lines) if raw.rstrip() == "silverbullet:"]
    if header:
        new = "\n".join([*lines[: header[0] + 1], line, *lines[header[0] + 1 :]])
    else:
        body = text if not text or text.endswith("\n") else text + "\n"
        new = f"{body}silverbullet:\n{line}\n"
    try:
        before = yaml.safe_load(text) or {}
        after = yaml.safe_load(new) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    section = dict(before.get("silverbullet") or {})
    section[key] = value
    return new if after == {**before, "silverbullet": section} else None
