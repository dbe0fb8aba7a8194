"""Detection of another memory system (ocmem.setup.oldmemory): a corpus of realistic skills and
AGENTS.md sections, memory systems and not, scored by signals; the section cutter."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.home.paths import Paths
from ocmem.setup import memorysignals, oldmemory
from ocmem.setup.memorysignals import FACT, INSTRUCTION, NOTE

# --- the corpus: skills ------------------------------------------------------------------------

MEMORY_SKILLS: dict[str, str] = {
    "memory": """---
name: memory
description: Persistent memory for personalisation. Use it when the user shares a preference or a fact worth keeping.
---
## What to keep
| Kind | File |
|---|---|
| Preferences | facts/preferences.jsonl |

## How
Append one JSON line per fact to `.memory/facts/preferences.jsonl`, then answer.
""",
    "memory-bank": """---
name: memory-bank
description: Project context that survives between sessions.
---
# Memory bank
Read `memory-bank/activeContext.md` and `progress.md` before any task.
Update `activeContext.md` when the focus changes.
""",
    "memory-manager": """---
name: memory-manager
description: Manage the user's long-term facts in memory/MEMORY.md.
---
When the user asks you to remember something, add a bullet to memory/MEMORY.md.
Keep it short; remove outdated facts.
""",
    "kessho": """---
name: kessho
description: Layered context for the agent.
---
## Hot
context.md: loaded at the start of every session.
## Warm
Summaries of recent work.
## Cold
history.md: an append-only log, searched on demand.
""",
    "souvenirs": """---
name: souvenirs
description: Garde en mémoire les préférences de l'utilisateur d'une session à l'autre.
---
Quand l'utilisateur exprime une préférence, note-la dans ~/souvenirs.md.
""",
    "project-memory": """---
name: project-memory
description: Records architectural decisions so later sessions know them.
---
After a decision, append it to `.memory/decisions.md` with the date.
""",
    "claude-mem": """---
name: claude-mem
description: Search what past sessions learned.
---
Call `mem_search` with a few keywords before starting; save new findings with `mem_save`.
""",
    "long-term-memory": """---
name: long-term-memory
description: Durable recall backed by SQLite.
---
# Long-term memory
Run `ltm add "fact"` to store; `ltm search words` to recall.
""",
    "memoire-projet": """---
name: memoire-projet
description: Mémoire du projet, relue au début de chaque tâche.
---
# Mémoire du projet
Lis MEMORY.md avant de commencer. Ajoute-y chaque fait nouveau.
""",
    "remember": """---
name: remember
description: Use when the user says "remember this" or "don't forget".
---
Write the fact to ~/notes/remembered.md, one line, dated.
""",
    "notes-persistantes": """---
name: notes-persistantes
description: Notes que l'agent garde entre les sessions.
---
Écris chaque note dans notes/persistantes.md.
""",
    "agent-brain": """---
name: agent-brain
description: Gives the agent a memory of what it learned, kept across sessions.
---
Append each lesson to brain/MEMORY.md.
""",
}

OTHER_SKILLS: dict[str, str] = {
    "docker": """---
name: docker
description: Build, run and debug containers with Docker and Compose.
---
# Docker
## Memory limits
Set `mem_limit: 512m` in compose, or `docker run --memory 512m`. A container that exceeds its
memory limit is OOM-killed: check `docker stats` for memory usage.
""",
    "kubernetes": """---
name: kubernetes
description: Deploy and troubleshoot workloads on a Kubernetes cluster.
---
Always set resources: `requests: {cpu: 100m, memory: 128Mi}` and memory limits.
Pods evicted for memory pressure: `kubectl describe node`.
""",
    "redis-cache": """---
name: redis-cache
description: Configure Redis as an in-memory cache for the web app.
---
Set `maxmemory 256mb` and `maxmemory-policy allkeys-lru`. Redis keeps data in memory; enable
AOF only if the cache must survive a restart.
""",
    "python-profiling": """---
name: python-profiling
description: Find slow code and memory leaks in Python services.
---
Use `tracemalloc` or memray as a memory profiler; compare snapshots to spot a memory leak.
""",
    "git-workflow": """---
name: git-workflow
description: Branching and commit conventions for this team.
---
Rebase on main before opening a pull request. Remember to sign commits (`git commit -S`).
""",
    "changelog": """---
name: changelog
description: Keep CHANGELOG.md up to date on every release.
---
Add an entry under "Unreleased" for each user-visible change; write it in the past tense.
""",
    "meeting-notes": """---
name: meeting-notes
description: Turn a meeting transcript into notes with decisions and action items.
---
Write the notes to notes/YYYY-MM-DD-topic.md with sections Decisions and Actions.
""",
    "rust": """---
name: rust
description: Write idiomatic, safe Rust.
---
Prefer borrowing to cloning; memory safety comes from ownership. Avoid `unsafe` blocks.
""",
    "postgres-tuning": """---
name: postgres-tuning
description: Tune PostgreSQL for a small VPS.
---
Set shared_buffers to 25% of RAM and work_mem to 16MB; watch memory usage with `free -m`.
""",
    "react-performance": """---
name: react-performance
description: Speed up React rendering.
---
Wrap pure components in `React.memo`; use `useMemo` for expensive values (memoization).
""",
    "gpu-training": """---
name: gpu-training
description: Train models on a single GPU without running out of memory.
---
On `CUDA out of memory`, halve the batch size; GPU memory is freed with `torch.cuda.empty_cache()`.
""",
    "jvm-tuning": """---
name: jvm-tuning
description: Size the JVM heap for containers.
---
Use `-XX:MaxRAMPercentage=75`; heap memory above the container memory limit gets the pod killed.
""",
    "handoff": """---
name: handoff
description: Write a short status before stopping work.
---
List the open branches and failing tests so the next session can pick up quickly.
""",
    "sqlite": """---
name: sqlite
description: Use SQLite in tests.
---
Open `sqlite3.connect(":memory:")` for an in-memory database that vanishes with the test.
""",
    "linux-admin": """---
name: linux-admin
description: Administer Debian servers.
---
`free -h` shows available memory and swap; high memory usage often means a runaway process.
""",
    "langchain-patterns": """---
name: langchain-patterns
description: Patterns for LangChain chains, agents, tools, retrieval and conversation memory.
---
## Conversation memory
Keep one message history per session id; trim it to the last 20 messages before each call.
## Retrieval
Embed documents once; vector stores hold the embeddings.
""",
    "context-management": """---
name: context-management
description: Keep the working memory of a long coding session small and accurate.
---
## Working memory
Read a file before editing it. Summarise what you explored before moving on; drop stale details.
""",
    "code-review": """---
name: code-review
description: Review a pull request for correctness and clarity.
---
Read the tests first. Remember: be specific and kind in comments.
""",
}


def flagged(name: str, text: str) -> bool:
    skill = memorysignals.split_skill(name, text)
    return memorysignals.runs_a_memory(
        memorysignals.skill_signals(skill.name, skill.description, skill.body)
    )


@pytest.mark.parametrize("name", sorted(MEMORY_SKILLS))
def test_memory_skills_are_flagged(name: str) -> None:
    assert flagged(name, MEMORY_SKILLS[name])


@pytest.mark.parametrize("name", sorted(OTHER_SKILLS))
def test_other_skills_are_not_flagged(name: str) -> None:
    skill = memorysignals.split_skill(name, OTHER_SKILLS[name])
    signals = memorysignals.skill_signals(skill.name, skill.description, skill.body)
    assert not memorysignals.runs_a_memory(signals), signals


def test_the_corpus_is_big_enough_and_scores_as_reported() -> None:
    """The figures the report gives: flagged / total on each side of the corpus."""
    positives = sum(flagged(n, t) for n, t in MEMORY_SKILLS.items())
    negatives = sum(flagged(n, t) for n, t in OTHER_SKILLS.items())
    assert len(OTHER_SKILLS) >= 10 and len(MEMORY_SKILLS) >= 10
    assert (positives, negatives) == (len(MEMORY_SKILLS), 0)


def test_signals_say_why_in_the_users_words() -> None:
    skill = memorysignals.split_skill("souvenirs", MEMORY_SKILLS["souvenirs"])
    labels = [
        s.label for s in memorysignals.skill_signals(skill.name, skill.description, skill.body)
    ]
    assert labels[:2] == ["nom « souvenirs »", "description (« mémoire »)"]
    assert "fichier souvenirs.md" in labels


def test_a_memory_word_in_passing_is_weak() -> None:
    signals = memorysignals.skill_signals(
        "deploy",
        "Deploy the app.",
        "A good deploy leaves a memory of what changed: the release notes.\n",
    )
    assert memorysignals.score(signals) == 1


def test_a_broken_frontmatter_still_gives_its_name_and_description() -> None:
    skill = memorysignals.split_skill(
        "x", "---\nname: memory\ndescription: Keeps facts: [broken\n---\nbody\n"
    )
    assert (skill.name, skill.description, skill.body) == (
        "memory",
        "Keeps facts: [broken",
        "\nbody\n",
    )


def test_a_skill_promoted_by_ocmem_is_recognised() -> None:
    text = "---\nname: memoire-vps\ndescription: Mémoire du VPS.\nmetadata:\n  source: journal 2026-11-20 10:00\n  proposition: P-0003\n---\nx\n"
    assert memorysignals.split_skill("memoire-vps", text).promoted


# --- the corpus: AGENTS.md sections --------------------------------------------------------------

MEMORY_SECTIONS: list[tuple[str, str]] = [
    (
        "## Mémoire\n\n- Le VPS tourne sous Debian 12\n- Les déploiements passent par Ansible\n",
        "Mémoire",
    ),
    ("## Memory\n\nAlways write new facts about the project to MEMORY.md.\n", "Memory"),
    ("## Souvenirs\n\n- L'utilisateur préfère pnpm\n", "Souvenirs"),
    (
        "## Notes persistantes\n\n- Le serveur de sauvegarde s'appelle backup01\n",
        "Notes persistantes",
    ),
    (
        "## Remember\n\nWhat I told you in earlier sessions:\n\n- The user prefers short answers\n- Use pnpm, never npm\n",
        "Remember",
    ),
    ("## Remember\n\nWhen I say « note this », add it to ~/notes/memory.md.\n", "Remember"),
    (
        "## Contexte\n\nUne API Flask.\n\n### Mémoire du projet\n\n- La base est PostgreSQL 16\n",
        "Mémoire du projet",
    ),
    ("## Long-term memory\n\nSee memory-bank/ and keep it current.\n", "Long-term memory"),
    ("# Style\n\nFrançais.\n\n# Memory\n\n- The staging host is stg01\n", "Memory"),
    (
        "## À retenir entre les sessions\n\n- Les certificats expirent en mars\n",
        "À retenir entre les sessions",
    ),
]
OTHER_SECTIONS: list[str] = [
    "## Style\n\nRéponds en français, sans emoji.\n",
    "## Docker\n\nSet memory limits on every service (`mem_limit: 512m`).\n",
    "## Performance\n\nUse an in-memory cache (Redis) for sessions.\n",
    "## Commits\n\nRemember to sign commits.\n",
    "## Tests\n\n- run pytest\n- keep coverage above 90 %\n",
    "## Memory limits\n\n- api: 512m\n- worker: 1g\n",
    "## Remember\n\nAlways answer in French.\n",
    "## Remember\n\nYou are a reviewer, not a competitor. Give:\n1. Validation\n2. Alternatives\n3. Risks\n",
    "## À retenir\n\n- relire le diff avant de conclure\n- une PR par sujet\n",
    "# Projet X — mémoire technique\n\n## Style\n\n- phrases courtes\n\n## Outils\n\n- uv, ruff\n",
    "## In-memory store\n\n- sessions live in memory\n",
    "## Contexte\n\nLe projet est une API Flask.\n",
    "## RAM\n\nThe VPS has 2 GB of memory; keep memory usage under 1.5 GB.\n",
    "## Shell\n\n```bash\n## Memory\n- echo not a heading\n```\n",
    "<!-- ocmem:begin -->\n## Mémoire et apprentissage\n\n- Écris dans memory/ avec ocmem\n<!-- ocmem:end -->\n",
]


@pytest.mark.parametrize(("text", "title"), MEMORY_SECTIONS)
def test_memory_sections_are_flagged(text: str, title: str) -> None:
    document = "# Règles\n\nIntro.\n\n" + text + "\n## Fin\n\nDernière section.\n"
    found = memorysignals.memory_sections(document)
    assert [s.title for s, _ in found] == [title]


@pytest.mark.parametrize("text", OTHER_SECTIONS)
def test_other_sections_are_not_flagged(text: str) -> None:
    assert memorysignals.memory_sections("# Règles\n\n" + text) == []


def test_a_section_runs_to_the_next_heading_of_its_level_or_ocmems_marker() -> None:
    text = "# T\n\n## Mémoire\n- a fact here\n### Détail\n- more facts\n## Suite\nx\n## Memory\n- b fact\n<!-- ocmem:begin -->\n## y\n<!-- ocmem:end -->\n"
    found = memorysignals.memory_sections(text)
    assert [text[s.start : s.end] for s, _ in found] == [
        "## Mémoire\n- a fact here\n### Détail\n- more facts\n",
        "## Memory\n- b fact\n",
    ]
    assert [(s.first_line, s.last_line) for s, _ in found] == [(3, 6), (9, 10)]


def test_cutting_keeps_every_other_byte() -> None:
    text = "# R\r\n\r\nA.\r\n\r\n## Mémoire\r\n- Le VPS est sous Debian\r\n\r\n## B\r\nb\r\n"
    spans = [(s.start, s.end) for s, _ in memorysignals.memory_sections(text)]
    assert memorysignals.cut(text, spans) == "# R\r\n\r\nA.\r\n\r\n## B\r\nb\r\n"


_BLOCKS = st.sampled_from(
    [
        "## Mémoire\n- Le VPS est sous Debian\n",
        "## Memory\nWrite facts to MEMORY.md.\n",
        "### Souvenirs\n- pnpm\n",
        "## Style\nCourt.\n",
        "### Détails\n- un point\n",
        "# Titre\n",
        "## Memory limits\n- 512m\n",
        "texte libre\n",
        "```\n## Memory\n- dans du code\n```\n",
        "<!-- ocmem:begin -->\n## Mémoire et apprentissage\n- règles\n<!-- ocmem:end -->\n",
        "\n",
    ]
)


@given(st.lists(_BLOCKS, max_size=12))
def test_cutting_what_is_found_leaves_nothing_to_find_and_everything_else(
    blocks: list[str],
) -> None:
    text = "".join(blocks)
    found = memorysignals.memory_sections(text)
    spans = [(s.start, s.end) for s, _ in found]
    rest = memorysignals.cut(text, spans)
    assert memorysignals.memory_sections(rest) == []
    # the spans are disjoint, and what is kept is the text outside them, in order
    ordered = sorted(spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ordered))
    outside = "".join(
        text[a:b]
        for a, b in zip(
            [0] + [e for _, e in ordered], [s for s, _ in ordered] + [len(text)], strict=True
        )
    )
    assert rest == outside
    # ocmem's own section is never cut
    assert rest.count("<!-- ocmem:begin -->") == text.count("<!-- ocmem:begin -->")


@given(st.lists(_BLOCKS, max_size=12))
def test_sections_nest_or_are_apart(blocks: list[str]) -> None:
    found = memorysignals.sections("".join(blocks))
    for a in found:
        assert a.start < a.end
        for b in found:
            assert (
                a.end <= b.start
                or b.end <= a.start
                or (a.start <= b.start and b.end <= a.end)
                or (b.start <= a.start and a.end <= b.end)
            )


# --- what an old memory knew --------------------------------------------------------------------


def test_old_lines_are_facts_notes_or_instructions() -> None:
    text = """---
name: x
---
# Mémoire
Faits connus :
- Le VPS tourne sous Debian 12
- [ ] migrer la base
- [x] renouveler le certificat
- TODO: nettoyer les logs
- 2026-11-20 : certificats renouvelés
- Écris chaque nouveau fait dans MEMORY.md
- Appelle mem_search avant une tâche
| a | b |
```
- dans du code
```
Le serveur de sauvegarde est backup01
ok
"""
    found = [(line.line, line.text, line.kind) for line in memorysignals.old_lines(text)]
    assert found == [
        (6, "Le VPS tourne sous Debian 12", FACT),
        (7, "migrer la base", NOTE),
        (9, "TODO: nettoyer les logs", NOTE),
        (10, "2026-11-20 : certificats renouvelés", NOTE),
        (11, "Écris chaque nouveau fait dans MEMORY.md", INSTRUCTION),
        (12, "Appelle mem_search avant une tâche", INSTRUCTION),
        (17, "Le serveur de sauvegarde est backup01", FACT),
    ]


@pytest.mark.parametrize(
    ("line", "statement", "kind"),
    [
        ("This file stores long-term facts about the user.", None, INSTRUCTION),
        ("Ce fichier est relu à chaque session.", None, INSTRUCTION),
        ("Memory is for what has recurring value.", None, INSTRUCTION),
        ("Remember: the VPS is in Frankfurt", "the VPS is in Frankfurt", FACT),
        ("Retiens que la prod est en Debian 12", "la prod est en Debian 12", FACT),
        ("Le VPS a 2 Go de mémoire vive", None, FACT),
        ("en cours : migration vers Postgres 16", None, NOTE),
    ],
)
def test_what_a_line_is(line: str, statement: str | None, kind: str) -> None:
    (found,) = memorysignals.old_lines(line)
    assert (found.text, found.kind) == (statement or line, kind)


def test_in_a_section_only_the_list_items_are_statements() -> None:
    body = "Ici, la mémoire du projet.\n\n- Le VPS tourne sous Debian 12\n"
    assert [line.text for line in memorysignals.old_lines(body, bullets_only=True)] == [
        "Le VPS tourne sous Debian 12"
    ]


@pytest.mark.parametrize(
    ("answer", "yes"),
    [
        ("o", True),
        ("Oui", True),
        ("y", True),
        ("yes ", True),
        ("", False),
        ("n", False),
        ("non", False),
        ("peut-être", False),
    ],
)
def test_answers(answer: str, yes: bool) -> None:
    assert memorysignals.is_yes(answer) is yes


# --- where skills are looked for --------------------------------------------------------------


def test_jsonc_comments_and_trailing_commas_are_dropped_strings_kept() -> None:
    text = '{\n  // skills\n  "skills": {"paths": ["~/a//b", "/x/*y*/",],}, /* end */\n}'
    assert json.loads(oldmemory.strip_jsonc(text)) == {"skills": {"paths": ["~/a//b", "/x/*y*/"]}}


def test_roots_cover_opencodes_places_and_configured_paths(tmp_path: Path) -> None:
    home, user = tmp_path / "home", tmp_path / "user"
    home.mkdir()
    (home / "opencode.json").write_text(
        json.dumps({"skills": {"paths": ["~/mes-skills", str(tmp_path / "abs"), "rel/skills"]}})
    )
    found, notes = oldmemory.roots(Paths(home), {"HOME": str(user)}, sync_mode=False)
    assert [r.path for r in found] == [
        home / "skill",
        home / "skills",
        user / ".claude/skills",
        user / ".agents/skills",
        user / "mes-skills",
        tmp_path / "abs",
    ]
    assert len(notes) == 1 and "'rel/skills'" in notes[0]


def test_a_broken_opencode_json_is_said_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text("{ nope")
    found, notes = oldmemory.roots(Paths(tmp_path), {"HOME": str(tmp_path / "u")}, sync_mode=False)
    assert len(found) == 4 and "opencode.json n'est pas du JSON valide" in notes[0]


def write_skill(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text)
    return folder


def test_detect_finds_memory_skills_everywhere_opencode_looks(tmp_path: Path) -> None:
    home, user = tmp_path / "home", tmp_path / "user"
    env = {"HOME": str(user)}
    write_skill(home / "skills", "memory-bank", MEMORY_SKILLS["memory-bank"])
    write_skill(home / "skill", "docker", OTHER_SKILLS["docker"])
    write_skill(user / ".claude/skills", "kessho", MEMORY_SKILLS["kessho"])
    write_skill(user / ".agents/skills/team", "souvenirs", MEMORY_SKILLS["souvenirs"])
    write_skill(user / "extra", "claude-mem", MEMORY_SKILLS["claude-mem"])
    write_skill(home / "skills", "retrospective", MEMORY_SKILLS["memory-manager"])  # ocmem's slot
    (home / "opencode.jsonc").write_text('{"skills": {"paths": ["~/extra"]}}')
    scan = oldmemory.detect(Paths(home), env)
    assert [(f.title, oldmemory.shown(f.path, Paths(home), env)) for f in scan.findings] == [
        ("memory-bank", "skills/memory-bank"),
        ("kessho", "~/.claude/skills/kessho"),
        ("souvenirs", "~/.agents/skills/team/souvenirs"),
        ("claude-mem", "~/extra/claude-mem"),
    ]


def test_a_skill_inside_a_flagged_skill_goes_with_it(tmp_path: Path) -> None:
    user = tmp_path / "user"
    outer = write_skill(user / ".claude/skills", "memory", MEMORY_SKILLS["memory"])
    write_skill(outer, "remember", MEMORY_SKILLS["remember"])
    scan = oldmemory.detect(Paths(tmp_path / "home"), {"HOME": str(user)})
    assert [f.path for f in scan.findings] == [outer]


def test_symlinked_skill_folders_are_followed_once(tmp_path: Path) -> None:
    user = tmp_path / "user"
    real = write_skill(tmp_path / "dotfiles", "souvenirs", MEMORY_SKILLS["souvenirs"])
    (user / ".claude/skills").mkdir(parents=True)
    (user / ".claude/skills/souvenirs").symlink_to(real)
    (real / "loop").symlink_to(real)
    scan = oldmemory.detect(Paths(tmp_path / "home"), {"HOME": str(user)})
    assert [f.path for f in scan.findings] == [user / ".claude/skills/souvenirs"]


def test_a_lone_title_is_not_a_section_of_the_file() -> None:
    text = "# Mémoire du projet\n\n- lu au démarrage\n\n## Style\n\n- court\n"
    assert memorysignals.memory_sections(text) == []


@pytest.mark.parametrize(
    ("line", "instruction"),
    [
        ("Append new facts to MEMORY.md.", True),
        ("Mets à jour la mémoire du projet.", True),
        ("Écris chaque fait nouveau dans ~/souvenirs.md", True),
        ("Write tests. The memory of the team is long.", False),  # another sentence
        ("Read MEMORY.md; then write the code", False),
        ("It covers chains, agents, tools, RAG, memory, output parsers and vector stores.", False),
        ("Set memory limits and update the compose file.", False),  # technical memory
        ("Never answer from memory: check the docs.", False),  # an idiom
    ],
)
def test_an_instruction_to_write_into_a_memory(line: str, instruction: bool) -> None:
    assert memorysignals.is_memory_instruction(line) is instruction
