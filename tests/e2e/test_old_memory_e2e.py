"""`ocmem init --replace-old` seen from the real OpenCode 1.18.33: before, the model is offered
the old memory skills and reads the old AGENTS.md section; after, only ocmem's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from e2e.fake_llm import Text
from e2e.harness import OpenCode

pytestmark = pytest.mark.e2e


def test_after_replace_old_opencode_loads_one_memory_system(oc: OpenCode) -> None:
    oc.add_skill(
        "memory-bank",
        "Keeps project context across sessions in MEMORY.md.",
        "# Memory bank\nRead MEMORY.md at the start. Append new facts to MEMORY.md.",
        extra_files={"MEMORY.md": "- The VPS runs Debian 12\n"},
    )
    elsewhere = oc.home / "old-skills" / "souvenirs"
    elsewhere.mkdir(parents=True)
    (elsewhere / "SKILL.md").write_text(
        "---\nname: souvenirs\ndescription: Garde en mémoire les préférences d'une session à "
        "l'autre.\n---\n\nNote chaque préférence dans souvenirs.md.\n"
    )
    oc.config["skills"] = {"paths": [str(oc.home / "old-skills")]}
    (oc.config_dir / "opencode.json").write_text(json.dumps(oc.config))
    (oc.config_dir / "AGENTS.md").write_text(
        "# Règles\n\n## Mémoire\n\n- Le serveur de sauvegarde s'appelle backup01\n\n## Style\n\nCourt.\n"
    )
    project = oc.project()

    oc.llm.set_script(Text("avant"))
    assert oc.run(project, "bonjour").returncode == 0
    before = oc.llm.main_requests[-1].system
    assert "<name>memory-bank</name>" in before and "<name>souvenirs</name>" in before
    assert "backup01" in before

    env = {**os.environ, "HOME": str(oc.home)}
    done = subprocess.run(
        [sys.executable, "-m", "ocmem", "--home", str(oc.config_dir), "init", "--replace-old"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    oc.llm.set_script(Text("après"))
    assert oc.run(project, "bonjour").returncode == 0
    after = oc.llm.main_requests[-1].system
    assert "<name>retrospective</name>" in after and "Mémoire et apprentissage" in after
    assert "<name>memory-bank</name>" not in after and "<name>souvenirs</name>" not in after
    assert "backup01" not in after and "Court." in after
    pending = (oc.config_dir / "memory/pending.md").read_text()
    assert "The VPS runs Debian 12" in pending and "backup01" in pending
