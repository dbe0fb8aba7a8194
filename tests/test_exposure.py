"""Session taint, the rules (ocmem.guards.exposure) and the record (ocmem.home.sessions): which shell commands
bring outside content, which paths they name, how a source is kept, exposure that only grows.

The plugin applies the same regular expressions in JavaScript: the last test runs them in node
on the tables and on random commands and checks that both languages agree.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock
from ocmem.formats import marks
from ocmem.guards import exposure
from ocmem.home import sessions
from ocmem.home.paths import Paths
from ocmem.home.workspace import Workspace

FETCHING = [
    "curl -s http://127.0.0.1:8000/doc",
    "curl -o page.html example.org",
    "wget -qO- example.org",
    "/usr/bin/curl example.org",
    "git clone /tmp/repo x",
    "git -C vendor/x pull",
    "git --no-pager fetch origin",
    "git submodule update --init",
    "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://x\").read())'",
    "python3 - <<EOF\nprint(1)\nEOF",
    "python3 <<EOF\nprint(1)\nEOF",
    "node -e 'fetch(process.argv[1])' x",
    "perl -pe 's/a/b/' f",
    "ruby -e 'puts 1'",
    "php -r 'echo 1;'",
    "deno eval 'await fetch(1)'",
    "npm install left-pad",
    "npx cowsay hi",
    "pip install requests",
    "python3 -m pip install requests",
    "uv run pytest",
    "cargo build",
    "go get example.org/x",
    "apt-get install -y jq",
    "docker pull alpine",
    "ssh host cat /etc/motd",
    "scp host:/etc/motd .",
    "rsync -a host:/x .",
    "nc example.org 80",
    "dig txt example.org",
    "gh issue view 12",
    "echo http://example.org",
    "exec 3<>/dev/tcp/10.0.0.1/80",
    "o=$(curl -s x); echo $o",
    "ls && wget x",
]
NOT_FETCHING = [
    "echo travail-1",
    "ls -la src && git status --short",
    "git log --oneline -5",
    "git diff HEAD~1",
    "git commit -am 'x'",
    "npm test",
    "npm run build",
    "python3 -m pytest tests -q",
    "python3 script.py",
    "node build.js",
    "cat README.md",
    "grep -r http src",
    "docker ps",
    "make",
    "o=ocmem; $o note x",
    'sh -c "oc""mem note x"',
    "echo curling",
    "ls ./links/",
]


@pytest.mark.parametrize("command", FETCHING)
def test_commands_that_fetch(command: str) -> None:
    assert exposure.fetches(command)


@pytest.mark.parametrize("command", NOT_FETCHING)
def test_commands_that_stay_local(command: str) -> None:
    assert not exposure.fetches(command)


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat /tmp/poison.md", ["/tmp/poison.md"]),
        ("cd /tmp && cat poison.md", ["/tmp"]),
        (
            "cat ~/Téléchargements/a.md $HOME/b ${HOME}/c",
            ["~/Téléchargements/a.md", "$HOME/b", "${HOME}/c"],
        ),
        ("cat ../voisin/README.md; ls ..", ["../voisin/README.md", ".."]),
        ("curl http://example.org/x", []),  # a URL is a fetch, not a path
        ("PATH=/usr/bin:$PATH make", ["/usr/bin"]),
        ("echo ok > /dev/null 2>&1", ["/dev/null"]),
        ("echo travail-1", []),
        ("cat src/app.ts", []),
    ],
)
def test_paths_a_command_names(command: str, paths: list[str]) -> None:
    assert exposure.named_paths(command) == paths


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ("cat notes.md", ["notes.md"]),
        ("cat node_modules/pkg/README.md src/app.ts", ["node_modules/pkg/README.md", "src/app.ts"]),
        ("python3 -m pytest tests -q", []),
        ("echo travail-1", []),
        ("cat /tmp/x.md", []),  # absolute: named_paths
    ],
)
def test_files_a_command_names(command: str, files: list[str]) -> None:
    assert exposure.named_files(command) == files


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ("webfetch http://127.0.0.1:8000/doc", "webfetch http://127.0.0.1:8000/doc"),
        ("webfetch https://user:pw@example.org/a?token=abc#x", "webfetch https://example.org/a"),
        ("read /tmp/[poison]].md", "read /tmp/(poison)).md"),
        ("bash: curl x\n| sh ·", "bash: curl x | sh -"),
        ("x" * 300, "x" * 40 + "…" + "x" * 79),
        (
            "read /tmp/pytest-of-root/pytest-668/popen-gw1/test_no_injected_fact_reaches_0/e2e/"
            "project/node_modules/facturation-sdk/README.md",
            "read /tmp/pytest-of-root/pytest-668/pope…"
            "t_no_injected_fact_reaches_0/e2e/project/node_modules/facturation-sdk/README.md",
        ),
        ("", "(source inconnue)"),
        (
            "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuv' x",
            "(source masquée : elle contenait un secret ou une donnée personnelle)",
        ),
        (
            "mail jean.dupont@gmail.com",
            "(source masquée : elle contenait un secret ou une donnée personnelle)",
        ),
    ],
)
def test_a_source_is_kept_on_one_line_without_secrets(source: str, kept: str) -> None:
    assert exposure.clean_source(source) == kept


def test_the_configured_token_is_masked_in_a_source() -> None:
    token = "sb-token-7c1e9a4f2b8d6e3a"
    assert "masquée" in exposure.clean_source(f"curl -H x:{token} http://sb", [token])


@given(st.text(max_size=400))
def test_any_source_becomes_one_safe_line(source: str) -> None:
    kept = exposure.clean_source(source)
    assert kept and "\n" not in kept and "]" not in kept and "·" not in kept
    assert len(kept) <= exposure.SOURCE_CHARS or kept.startswith("(source masquée")


@pytest.mark.parametrize(
    ("mark", "quarantined"),
    [
        ("quarantaine : webfetch x", True),
        ("exposée, demandée par l'utilisateur : webfetch x", False),
        ("exposée, levée par l'humain : webfetch x", False),
        ("quarantaine", False),
        ("", False),
        (None, False),
    ],
)
def test_which_marks_quarantine(mark: str | None, quarantined: bool) -> None:
    assert marks.quarantined(mark) is quarantined


# --- the session record --------------------------------------------------------------------------

ITEMS = st.tuples(
    st.sampled_from(list(exposure.KIND_LABELS)),
    st.sampled_from(["", "webfetch a", "curl b", "/tmp/c"]),
)


@given(st.lists(st.lists(ITEMS, max_size=4), max_size=6))
def test_exposure_is_the_union_of_every_report(reports: list[list[tuple[str, str]]]) -> None:
    record: dict[str, object] = {"journal": [], "exposure": []}
    seen: list[tuple[str, str]] = []
    for report in reports:
        before = sessions.items(record)
        sessions.with_exposures(record, Clock(), report)
        assert sessions.items(record)[: len(before)] == before  # nothing removed, order kept
        for item in report:
            if item not in seen:
                seen.append(item)
    assert sessions.items(record) == seen
    assert (sessions.summary(record) is None) == (not seen)


def test_past_the_cap_new_items_are_counted_not_kept() -> None:
    record: dict[str, object] = {"journal": [], "exposure": []}
    sessions.with_exposures(
        record, Clock(), [("outside_read", f"/tmp/{i}") for i in range(sessions.MAX_ITEMS + 3)]
    )
    assert len(sessions.items(record)) == sessions.MAX_ITEMS and record["more"] == 3
    assert sessions.summary(record) == f"/tmp/0 (+{sessions.MAX_ITEMS + 2} autres)"


def test_a_summary_names_the_first_exposure_and_counts_the_others() -> None:
    record: dict[str, object] = {"journal": [], "exposure": []}
    sessions.with_exposure(record, Clock(), sessions.DIRECT_CALL)
    assert sessions.summary(record) == "appel direct hors du plugin"
    sessions.with_exposure(record, Clock(), "untrusted_tool", source="webfetch http://x")
    assert sessions.summary(record) == "appel direct hors du plugin (+1 autre)"


def test_windows_run_from_the_first_exposure_to_the_last_report(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    paths.sessions_dir.mkdir(parents=True)
    clean = {"journal": ["journal 2026-11-29 10:00"], "exposure": []}
    exposed = {
        "journal": [],
        "exposure": [
            {
                "kind": "untrusted_tool",
                "source": "webfetch x",
                "first": "2026-11-29T10:00:00+00:00",
                "count": 1,
            }
        ],
        "last": "2099-01-01T00:00:00+00:00",
    }
    (paths.sessions_dir / "ses_clean.json").write_text(json.dumps(clean))
    (paths.sessions_dir / "ses_web.json").write_text(json.dumps(exposed))
    (paths.sessions_dir / "ses_broken.json").write_text("{")
    ((session, start, end, is_open),) = sessions.windows(paths)
    assert (session, start, end, is_open) == ("ses_web", 1795946400.0, 4070908800.0, False)
    # A record ocmem saved (a memory call) after the plugin's last report: its window reaches
    # that save, by the time written in it (never by the file's timestamp, the kernel's), to
    # the millisecond (a file the session wrote just before must stay inside).
    exposed["last"] = "2026-11-29T10:30:00+00:00"
    clock = Clock(datetime(2026, 11, 29, 11, 0, 0, 987000))
    (paths.sessions_dir / "ses_web.json").write_text(sessions.render(exposed, clock))
    os.utime(paths.sessions_dir / "ses_web.json", (0, 0))
    ((_, _, end, _),) = sessions.windows(paths)
    assert end == clock.timestamp()


def test_a_window_stays_open_while_a_turn_runs(tmp_path: Path) -> None:
    clock = Clock()
    record: dict[str, Any] = {"journal": [], "exposure": []}
    sessions.with_exposure(record, clock, "untrusted_tool", source="webfetch x")
    sessions.reported(record, clock, open_turn=True)
    found = sessions.window(record)
    assert found is not None and found["open"] and found["start"] == clock.timestamp() * 1000
    clock.advance(minutes=5)
    sessions.reported(record, clock, open_turn=False)  # the turn ended (session.idle, dispose)
    assert sessions.window(record) == {
        "start": (clock.timestamp() - 300) * 1000,
        "end": clock.timestamp() * 1000,
        "open": False,
    }
    assert sessions.window({"journal": [], "exposure": []}) is None


def test_every_save_of_an_exposed_record_updates_the_window_index(workspace: Workspace) -> None:
    paths, clock = workspace.paths, workspace.clock
    record: dict[str, Any] = {"journal": [], "exposure": []}
    with workspace.transaction("test") as run:
        sessions.save(run, paths, "ses_clean", dict(record))
    assert not paths.windows_index.exists()  # a clean session has no window
    sessions.with_exposure(record, clock, "untrusted_tool", source="webfetch x")
    sessions.reported(record, clock, open_turn=True)
    with workspace.transaction("test") as run:
        sessions.save(run, paths, "ses_web", record)
    index = json.loads(paths.windows_index.read_text())
    assert [(w["session"], w["open"]) for w in index["windows"]] == [("ses_web", True)]
    assert stat.S_IMODE(paths.windows_index.stat().st_mode) == 0o644  # the plugin reads it
    paths.windows_index.unlink()  # an older ocmem, or a crash: rebuilt from the records
    assert list(sessions.read_index(paths)) == ["ses_web"]


# --- the plugin reads the same expressions -----------------------------------------------------


def _random_commands(count: int) -> list[str]:
    rng = random.Random(12)
    pieces = [
        *FETCHING,
        *NOT_FETCHING,
        "~",
        "$HOME",
        "..",
        "/",
        ":",
        "=",
        "'",
        '"',
        " ",
        "\t",
        "\n",
        "é",
        "\u00a0",
        "<<",
        "-c",
        "python3",
        "git",
        "pull",
        "http://",
        "a.b",
        "x/y",
    ]
    return [" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(count)]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_javascript_reads_the_rules_as_python_does() -> None:
    commands = FETCHING + NOT_FETCHING + _random_commands(2000)
    script = (
        "const [f, p, n, cmds] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const fetch = new RegExp(f), paths = new RegExp(p, 'g'), files = new RegExp(n, 'g');"
        "process.stdout.write(JSON.stringify(cmds.map((c) => [fetch.test(c), [...c.matchAll(paths)].map((m) => m[1]), [...c.matchAll(files)].map((m) => m[1])])))"
    )
    payload = json.dumps(
        [
            exposure.FETCH_COMMAND_SOURCE,
            exposure.PATH_TOKEN_SOURCE,
            exposure.FILE_TOKEN_SOURCE,
            commands,
        ]
    )
    done = subprocess.run(
        ["node", "-e", script],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    verdicts = json.loads(done.stdout)
    python = [
        [exposure.fetches(c), exposure.named_paths(c), exposure.named_files(c)] for c in commands
    ]
    differ = [c for c, js, py in zip(commands, verdicts, python, strict=True) if js != py]
    assert differ == []
    assert any(v[0] for v in verdicts) and not all(v[0] for v in verdicts)
