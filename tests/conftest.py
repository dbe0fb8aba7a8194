"""Shared fixtures: every test runs in its own HOME, XDG dirs and ocmem home (never the real ones)."""

from __future__ import annotations

import io
import itertools
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ocmem import clock as clock_module
from ocmem.home.settings import Settings, load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.setup.install import Installer
from ocmem.setup.opencodedir import CHECKED_OPENCODE
from support import sharedusers

# CI explores new examples at every run, within a fixed budget, from a seed it prints (replay a
# red run with `--hypothesis-seed=SEED`); nightly is CI's exploration at length, and the long
# run of the shared space (tests/test_sync_stateful.py), by hand or on a schedule; dev runs are
# short. No example database in CI or nightly: what a run does is its seed's alone.
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("nightly", settings.get_profile("ci"), max_examples=1000)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
SEEDED_PROFILES = {"ci", "nightly"}


def pytest_configure(config: pytest.Config) -> None:
    """In a seeded profile, a run without --hypothesis-seed draws one (said in the header and in
    the summary): every Hypothesis test of the run derives its examples from it."""
    if settings.get_current_profile_name() not in SEEDED_PROFILES:
        return
    from hypothesis import core

    # A pytest-xdist worker takes the controller's seed: one seed for the whole run.
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    if "hypothesis_seed" in workerinput:
        core.global_force_seed = workerinput["hypothesis_seed"]
    elif config.getoption("hypothesis_seed", None) is None:
        # Hypothesis's own hook sets it the same way for --hypothesis-seed (typed None there).
        core.global_force_seed = secrets.randbelow(2**32)  # type: ignore[assignment]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller, for each worker it starts: the run's seed goes along."""
    from hypothesis import core

    if settings.get_current_profile_name() in SEEDED_PROFILES:
        node.workerinput["hypothesis_seed"] = core.global_force_seed


def _seed_line() -> str | None:
    from hypothesis import core

    if settings.get_current_profile_name() not in SEEDED_PROFILES:
        return None
    profile = settings.get_current_profile_name()
    seed = core.global_force_seed
    return f"hypothesis seed {seed} (replay: HYPOTHESIS_PROFILE={profile} pytest … --hypothesis-seed={seed})"


def pytest_report_header(config: pytest.Config) -> str | None:
    return _seed_line()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    line = _seed_line()
    if line:
        terminalreporter.write_line(line)


HOME_ID = "maison"
"""The id of the test home: its pages are Agents/Inbox/maison/journal.md and …/pending.md."""


FAKE_OPENCODE = f"""#!/bin/sh
[ "$1" = "--version" ] && echo {CHECKED_OPENCODE} && exit 0
echo "opencode de test : seul --version répond" >&2
exit 2
"""


@pytest.fixture(autouse=True)
def _shared_users_held(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``shared_users`` has the real users to itself (support/sharedusers.py)."""
    if request.node.get_closest_marker("shared_users") is None:
        yield
        return
    with sharedusers.held():
        yield


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(fake_home / var.lower()))
    monkeypatch.setenv("OCMEM_HOME", str(tmp_path / "ocmem-home"))
    # A machine with OpenCode installed (ocmem doctor looks for it): a stand-in that only
    # answers --version, first on the PATH (the end-to-end suite runs the real binary by path).
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    opencode = fake_bin / "opencode"
    opencode.write_text(FAKE_OPENCODE)
    opencode.chmod(0o755)
    # And a crontab that is a file of the test's (ocmem doctor reads it): never the user's.
    (fake_bin / "crontab").write_text(FAKE_CRONTAB)
    (fake_bin / "crontab").chmod(0o755)
    monkeypatch.setenv("CRONTAB_FILE", str(tmp_path / "crontab-empty.txt"))
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    for var in list(os.environ):
        if var.startswith(("OCMEM_SILVERBULLET", "OCMEM_SESSION")):
            monkeypatch.delenv(var)
    # Searches by the words alone, unless a test asks for the meaning (``with_meaning``): the
    # encoder's model and its background work are for the tests that are about them.
    monkeypatch.setenv("OCMEM_MEANING", "0")
    return fake_home


@pytest.fixture
def with_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches use the meaning (ocmem.text.meaning) as a user's would, when it is installed."""
    monkeypatch.delenv("OCMEM_MEANING")


class Clock(clock_module.Clock):
    """The tests' clock: it says what the test set, and moves only when the test moves it
    (waits and deadlines still run on the machine's monotonic clock)."""

    def __init__(self, start: datetime = datetime(2026, 11, 29, 10, 0)):
        self.value = start

    def now(self) -> datetime:
        return self.value

    def __call__(self) -> datetime:
        return self.value

    def advance(self, **delta: float) -> None:
        self.value += timedelta(**delta)


REAL_CLOCK = "real_clock"
"""Marker of a test that runs ocmem on the machine's clock (a child process, the gate,
OpenCode): such a test builds every date it writes or expects from that clock, never a literal
(tests/test_calendar.py checks it); any other test that reaches the machine's clock fails."""

CLOCK_COMPARE = "clock_compare"
"""Marker of a test of a place where ocmem compares a file's timestamp with the clock
(tests/test_clock_compare.py lists them all): it runs on the machine's clock, as real_clock."""

MOVED_CLOCK_MARKS = (REAL_CLOCK, CLOCK_COMPARE)
"""What CI runs again with the machine's clock moved (.ci/run): every other test gets its
dates from the test's clock alone, so a moved machine clock cannot change what it does."""


_REAL_CLOCK_FIX = (
    "give ocmem the test's `clock`, or mark the test @pytest.mark.real_clock and build its "
    "dates from the machine's clock (never a literal)"
)


def runs_ocmem(args: object) -> bool:
    """Whether a command line starts ocmem, its plugin or OpenCode (which then run on the
    machine's clock): ``python -m ocmem``, the ``ocmem`` program, Python code importing it, a
    JavaScript runtime given ocmem's plugin (which starts the gate), or OpenCode."""
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    names = [Path(a).name for a in argv]
    if argv[1:] == ["--version"]:
        return False  # a version asked (ocmem doctor of OpenCode) reads no date
    if "ocmem" in names or any(n.startswith("opencode") for n in names):
        return True
    if names and names[0] in ("bun", "node") and any("ocmem" in a for a in argv[1:]):
        return True
    return any(
        (a == "-m" and b.startswith("ocmem")) or (a == "-c" and "ocmem" in b)
        for a, b in itertools.pairwise(argv)
    )


@pytest.fixture(autouse=True)
def no_real_clock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside tests marked real_clock, ocmem never reads the machine's clock: in this process
    (its system clock raises) or in a child process (starting one fails)."""
    if any(request.node.get_closest_marker(m) is not None for m in (*MOVED_CLOCK_MARKS, "e2e")):
        return  # OpenCode runs on the machine's clock: every e2e test does

    def refused(self: clock_module.Clock) -> datetime:
        raise AssertionError(f"this test reached the machine's clock: {_REAL_CLOCK_FIX}")

    monkeypatch.setattr(clock_module.Clock, "now", refused)
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if runs_ocmem(args):
            raise AssertionError(
                f"this test starts ocmem on the machine's clock ({args!r}): {_REAL_CLOCK_FIX}"
            )
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path, clock: Clock) -> Path:
    path = Path(os.environ["OCMEM_HOME"])
    Installer(Workspace(load_settings(path), clock=clock), home_id=HOME_ID).run()
    return path


@pytest.fixture
def app_settings(home: Path) -> Settings:
    return load_settings(home)


@pytest.fixture
def workspace(app_settings: Settings, clock: Clock) -> Workspace:
    return Workspace(app_settings, clock=clock)


@pytest.fixture
def memory(workspace: Workspace) -> Memory:
    return Memory(workspace)


@pytest.fixture
def proposals(workspace: Workspace) -> Proposals:
    return Proposals(workspace)


def journal_fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "titre": "Déployer le service X",
        "tags": ["docker", "vps"],
        "demande": "déployer X sur le VPS",
        "fait": "docker compose up -d",
        "piege": "le port 8080 était déjà pris",
        "lecon": "vérifier les ports libres avant de déployer",
        "resultat": "réussi",
    }
    fields.update(overrides)
    return fields


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> Callable[..., CliResult]:
    """Run ``ocmem`` in-process through its real entry point (argument parsing, error mapping),
    on the test's clock."""
    from ocmem.cli.entry import main

    def run(*args: str, stdin: str = "") -> CliResult:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args), clock)
        captured = capsys.readouterr()
        code = exit_info.value.code
        if "plugin-config" not in args:  # the plugin's settings: its patterns, not prose
            said_in_english(captured.out + captured.err, " ".join(args) + stdin)
        return CliResult(code if isinstance(code, int) else 1, captured.out, captured.err)

    return run


def said_in_english(output: str, given: str) -> None:
    """Every command-line scenario of the suite is scanned (issue 36): what ocmem prints names
    options in French and says « tu » (tests/support/frenchtext.py). What the scenario typed or
    gave on stdin may come back, so it is not held against the output."""
    from support.frenchtext import english_names, register_slips

    slips = english_names(output, given=given) + register_slips(output, given=given)
    assert not slips, f"ocmem printed {slips} (English option name or « vous »):\n{output}"


@pytest.fixture
def files_snapshot(home: Path) -> Callable[[], dict[str, bytes]]:
    """Bytes of every user-visible file under the home (ocmem's own state excluded)."""

    def snapshot() -> dict[str, bytes]:
        return {
            p.relative_to(home).as_posix(): p.read_bytes()
            for p in sorted(home.rglob("*"))
            if p.is_file() and ".ocmem" not in p.relative_to(home).parts
        }

    return snapshot


@pytest.fixture
def unchanged(files_snapshot: Callable[[], dict[str, bytes]]) -> Iterator[None]:
    """Asserts the test body left every memory file byte-identical (refusals write nothing)."""
    before = files_snapshot()
    yield
    assert files_snapshot() == before


# --- SilverBullet ---------------------------------------------------------------------------

SB_TOKEN = "test-token-7f3a9c2e5b1d"


@pytest.fixture
def sb() -> Iterator[Any]:
    """A SilverBullet-faithful server on loopback, with auth on."""
    from support.sbserver import FakeSilverBullet

    with FakeSilverBullet(token=SB_TOKEN) as server:
        yield server


def configure_sync(home: Path, url: str, token: str | None = SB_TOKEN, **extra: Any) -> None:
    """Point the ocmem home at ``url`` through ocmem.yaml and a 0600 token file."""
    import yaml

    section: dict[str, Any] = {
        "url": url,
        "retry_wait_seconds": 0.01,
        "timeout_seconds": 5,
        "quiet_seconds": 0.01,
        "patience_seconds": 5,
    }
    if token is not None:
        token_file = home / ".ocmem" / "silverbullet.token"
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
    section.update(extra)
    config = home / "ocmem.yaml"
    current = yaml.safe_load(config.read_text()) if config.exists() else {}
    current["silverbullet"] = section
    config.write_text(yaml.safe_dump(current, allow_unicode=True))


@pytest.fixture
def synced(home: Path, sb: Any) -> Path:
    configure_sync(home, sb.url)
    return home


FAKE_CRONTAB = """#!/bin/sh
# Stand-in for crontab(1): the table lives in $CRONTAB_FILE (`-u USER`, root's form, is ignored).
[ "$1" = "-u" ] && shift 2
if [ "$1" = "-l" ]; then [ -f "$CRONTAB_FILE" ] && cat "$CRONTAB_FILE" || exit 1; exit 0; fi
if [ "$1" = "-" ]; then cat > "$CRONTAB_FILE"; exit 0; fi
exit 2
"""


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in crontab(1) on PATH whose table is a file: the user's own is never touched."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    table = tmp_path / "crontab.txt"
    table.write_text("0 3 * * * /usr/bin/backup # à l'utilisateur\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("CRONTAB_FILE", str(table))
    return table
