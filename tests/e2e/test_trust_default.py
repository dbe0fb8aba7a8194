"""The attack corpus against the default (single-user) mode, in the real OpenCode.

OpenCode runs as the same user as ocmem, so nothing stops a write: the plugin's monitor must see
every change to the home and put it back before the model's next call, tell the model (tool
result or system prompt) and the user (OpenCode's log, a toast), and the SilverBullet token must
never reach a request body. Tricks the default mode is documented not to stop are reported, not
asserted (``Attack.default_residual``; docs/security.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from e2e.attacks import CORPUS, Attack, Ctx
from e2e.harness import OpenCode
from e2e.trust import Outcome, keep_copy, play_corpus, put_back, report, seed_home

pytestmark = pytest.mark.e2e

PROGRAM = [sys.executable, "-m", "ocmem"]
BATCH = 12


def batches(attacks: list[Attack]) -> list[list[Attack]]:
    plain = [a for a in attacks if not a.default_residual and a.name != "rename-config-dir"]
    groups = [plain[i : i + BATCH] for i in range(0, len(plain), BATCH)]
    # The most destructive trick alone, then each residual alone (it changes memory for good).
    groups += [[a] for a in attacks if a.name == "rename-config-dir"]
    return groups + [[a] for a in attacks if a.default_residual]


def test_every_trick_is_undone_before_the_next_model_call(oc: OpenCode) -> None:
    oc.config["permission"] = "allow"  # OpenCode's own prompts must not be what stops a trick
    project = oc.project()
    home = seed_home(oc, PROGRAM)
    ctx = Ctx(
        home=home, project=project, program=str(Path(sys.executable).with_name("ocmem")), owner=None
    )
    pristine = oc.root / "pristine-home"
    outcomes: list[Outcome] = []
    for group in batches(list(CORPUS)):
        oc._prepare(project)
        keep_copy(home, pristine)
        outcomes += play_corpus(oc, ctx, group)
        put_back(pristine, home)
    report("default mode", outcomes, oc.out_path("corpus-default.txt"))
    log = oc.log_text()
    strict = [o for o in outcomes if not o.attack.default_residual]
    assert len(CORPUS) >= 30
    assert [o.attack.name for o in strict if o.changed] == []
    assert [o.attack.name for o in outcomes if o.leaked] == []
    # Everything that touched the home was refused, or undone with the model told; the user
    # reads it in OpenCode's log (and a toast).
    undone = [o for o in strict if o.told and not o.refused]
    assert undone, "no trick reached the monitor"
    assert "hors d'ocmem" in log  # the user reads every restoration in OpenCode's log
