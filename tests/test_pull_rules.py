"""Which SilverBullet page a local file is pulled from (ocmem.home.space.pulled_from): the rule
the review page's gestures and pending annuler's steps in SilverBullet both name pages by."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.home.space import DEFAULT_PULL_RULES, PullRule, pulled_from

TEAM = (PullRule("Team/Memory.md", "memory/MEMORY.md"), PullRule("Team/Skills/", "skills/"))


@pytest.mark.parametrize(
    ("rules", "local", "remote"),
    [
        (DEFAULT_PULL_RULES, "memory/MEMORY.md", "Agents/Memory/MEMORY.md"),
        (DEFAULT_PULL_RULES, "memory/ARCHIVE.md", "Agents/Memory/ARCHIVE.md"),
        (DEFAULT_PULL_RULES, "skills/", "Agents/Skills/"),  # the folder itself
        (DEFAULT_PULL_RULES, "skills/deploy/SKILL.md", "Agents/Skills/deploy/SKILL.md"),
        (DEFAULT_PULL_RULES, "memory/journal.md", None),  # pushed, never pulled
        (TEAM, "memory/ARCHIVE.md", None),  # not pulled with this configuration
        ((*TEAM, *DEFAULT_PULL_RULES), "memory/MEMORY.md", "Team/Memory.md"),  # the first wins
        ((*TEAM, *DEFAULT_PULL_RULES), "memory/ARCHIVE.md", "Agents/Memory/ARCHIVE.md"),
        ((*TEAM, *DEFAULT_PULL_RULES), "skills/", "Team/Skills/"),
    ],
)
def test_the_page_a_local_file_is_pulled_from(
    rules: tuple[PullRule, ...], local: str, remote: str | None
) -> None:
    assert pulled_from(rules, local) == remote


@given(
    st.sampled_from(DEFAULT_PULL_RULES),
    st.from_regex(r"[a-z][a-z0-9-]{0,12}/SKILL\.md", fullmatch=True),
)
def test_what_a_rule_pulls_is_pulled_from_the_page_it_came_from(rule: PullRule, name: str) -> None:
    remote = rule.remote + name if rule.is_folder else rule.remote
    local = rule.local_for(remote)
    assert local is not None and pulled_from(DEFAULT_PULL_RULES, local) == remote
