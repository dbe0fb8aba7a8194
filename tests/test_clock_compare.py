"""Every place where ocmem compares a file's timestamp with the clock, tested on the machine's clock.

The kernel stamps files with its own time; ocmem's dates come from its ``Clock``. Where the two
meet (a session record an older ocmem wrote without a time, judged by its file's age; a home's
age read from its identity file when it does not say it), a test here runs the comparison on the
machine's clock, the file's timestamp set from that clock, on both sides of the boundary. CI runs
these and the ``real_clock`` tests again with the machine's clock moved to a year's end and a
leap day (.ci/run); every other test takes its dates from the test's clock alone. The scan below
fails when a comparison appears that is not listed here with its test.
"""

from __future__ import annotations

import ast
import json
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import HOME_ID, MOVED_CLOCK_MARKS
from ocmem.clock import Clock
from ocmem.home import identity, sessions
from ocmem.home.paths import Paths
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.review import USAGE_WINDOW_DAYS, review
from ocmem.setup.install import Installer
from test_calendar import _marks, _module_marks

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "sync"
PLUGIN = ROOT / "plugin" / "ocmem"
STAMPS = {f"st_{kind}time{unit}" for kind in "amc" for unit in ("", "_ns")}
STAMP_CALLS = {"getmtime", "getctime", "getatime"}
TS_STAMPS = re.compile(r"\b[amc]time(?:Ms|Ns)\b")
MARGIN = 3600  # seconds either side of a boundary

# Where a file's timestamp meets the clock, and the tests (run on the moved clock too) of each.
CLOCK_COMPARISONS = {
    "ocmem/home/sessions.py::forget_old": [
        "test_clock_compare.py::test_a_record_without_a_time_is_forgotten_by_its_files_age"
    ],
    "ocmem/home/identity.py::created": [
        "test_clock_compare.py::test_a_home_without_a_recorded_creation_is_as_old_as_its_identity_file"
    ],
    # A file's ctime inside an exposed session's window (and the offset of the kernel's file
    # clock from the process's, which libfaketime moves alone).
    "plugin/ocmem/taint.ts": [
        "test_plugin_taint.py::test_files_an_exposed_session_wrote_expose_their_readers_even_after_a_restart",
        "test_plugin_units.py::test_the_plugins_unit_tests_pass",
    ],
}
# Where a timestamp is read but never compared with the clock.
NOT_WITH_THE_CLOCK = {
    "ocmem/home/journalindex.py::_stat": "a file's stat against the one recorded at indexing",
    "ocmem/home/journalindex.py::_read": "a file's stat against the one recorded at indexing",
    "ocmem/setup/doctor.py::opencode_logs": "OpenCode's logs ordered by age, newest last",
    "plugin/ocmem/monitor.ts": "a file's stat against the one seen before it (a change, or not)",
    # ocmem essai's SilverBullet stand-in stamps and reports a page's time as the server does
    "ocmem/trial/standin.py::_stamp": "the server's own clock stamps the page it writes",
    "ocmem/trial/standin.py::_meta": "a page's time reported, as SilverBullet reports it",
}


def timestamp_readers() -> set[str]:
    """Each function of the package (each plugin module) that reads a file's timestamp."""
    found: set[str] = set()
    for path in sorted((PACKAGE / "ocmem").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                name = (
                    node.attr
                    if isinstance(node, ast.Attribute)
                    else node.id
                    if isinstance(node, ast.Name)
                    else ""
                )
                if name in STAMPS or name in STAMP_CALLS:
                    found.add(f"{path.relative_to(PACKAGE).as_posix()}::{function.name}")
    for path in sorted(PLUGIN.rglob("*.ts")):
        if TS_STAMPS.search(path.read_text(encoding="utf-8")):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def moved_clock_tests() -> set[str]:
    """Every test CI runs on the moved clock (file::name)."""
    found = set()
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_wide = bool(set(MOVED_CLOCK_MARKS) & _module_marks(tree))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and (
                module_wide or set(MOVED_CLOCK_MARKS) & _marks(node.decorator_list)
            ):
                found.add(f"{path.name}::{node.name}")
    return found


def test_every_comparison_of_a_file_timestamp_with_the_clock_is_tested_on_the_moved_clock() -> None:
    readers = timestamp_readers()
    unlisted = readers - set(CLOCK_COMPARISONS) - set(NOT_WITH_THE_CLOCK)
    assert not unlisted, (
        f"{sorted(unlisted)} read a file's timestamp: list each in CLOCK_COMPARISONS with a "
        "test marked clock_compare (or in NOT_WITH_THE_CLOCK, saying why no clock is involved)"
    )
    assert set(CLOCK_COMPARISONS) | set(NOT_WITH_THE_CLOCK) <= readers, "a listed place is gone"
    tests = [t for listed in CLOCK_COMPARISONS.values() for t in listed]
    assert set(tests) <= moved_clock_tests()


def test_the_scan_sees_what_it_claims() -> None:
    assert "ocmem/home/sessions.py::forget_old" in timestamp_readers()
    assert "plugin/ocmem/taint.ts" in timestamp_readers()
    assert (
        "test_clock_compare.py::test_a_record_without_a_time_is_forgotten_by_its_files_age"
        in moved_clock_tests()
    )
    assert "test_plugin_taint.py::test_a_window_is_recorded_before_the_call_that_opens_it_runs" in (
        moved_clock_tests()
    )


WALL_CLOCK_READS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today")}
WALL_CLOCK_READS |= {("date", "today")} | {("time", f) for f in ("time", "time_ns", "ctime")}
ARGLESS_READS = {("time", "localtime"), ("time", "gmtime")}  # with an argument: a conversion


def wall_clock_reads() -> set[str]:
    """Where the package reads the machine's wall clock (file:line)."""
    found = set()
    for path in sorted((PACKAGE / "ocmem").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            call = (name, node.func.attr)
            if call in WALL_CLOCK_READS or (call in ARGLESS_READS and not node.args):
                found.add(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    return found


# Stand-ins for programs that have their own clock (ocmem essai's sandbox): SilverBullet's server
# stamps the pages it writes, the model's answers carry their time. ocmem's dates are not there.
OTHER_PROGRAMS_CLOCKS = {"ocmem/trial/standin.py", "ocmem/trial/scriptedmodel.py"}


def test_only_the_clock_reads_the_machines_wall_clock() -> None:
    """What makes the moved-clock runs of CI enough: every other date ocmem uses comes from its
    Clock, which conftest refuses outside the tests marked to run on it."""
    files = {place.split(":")[0] for place in wall_clock_reads()}
    assert files - OTHER_PROGRAMS_CLOCKS == {"ocmem/clock.py"}


def _touch(path: Path, when: float) -> None:
    os.utime(path, (when, when))


@pytest.mark.clock_compare
def test_a_record_without_a_time_is_forgotten_by_its_files_age(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    paths.sessions_dir.mkdir(parents=True)
    clock = Clock()
    cutoff = clock.timestamp() - sessions.RETENTION_DAYS * 86400
    young, old = paths.sessions_dir / "ses_young.json", paths.sessions_dir / "ses_old.json"
    for record in (young, old):
        record.write_text(json.dumps({"journal": []}))  # as an older ocmem wrote: no time in it
    _touch(young, cutoff + MARGIN)
    _touch(old, cutoff - MARGIN)
    sessions.forget_old(paths, clock)
    assert young.exists() and not old.exists()


@pytest.mark.clock_compare
def test_a_home_without_a_recorded_creation_is_as_old_as_its_identity_file(
    tmp_path: Path,
) -> None:
    clock = Clock()
    home = tmp_path / "home"
    Installer(Workspace(load_settings(home), clock=clock), home_id=HOME_ID).run()
    paths = Paths(home)
    record = json.loads(paths.home_id.read_text())
    del record["created"]  # as every home.json written before the field
    paths.home_id.write_text(json.dumps(record))
    window_start = clock.timestamp() - USAGE_WINDOW_DAYS * 86400

    _touch(paths.home_id, window_start + MARGIN)  # younger than the usage window: too early
    made = identity.created(paths)
    assert made == datetime.fromtimestamp(window_start + MARGIN)
    too_early = review(Workspace(load_settings(home), clock=clock)).too_early
    assert too_early is not None and f"(le {made:%Y-%m-%d})" in too_early
    assert f"à partir du {made + timedelta(days=USAGE_WINDOW_DAYS):%Y-%m-%d}" in too_early

    _touch(paths.home_id, window_start - MARGIN)  # older: usage is judged
    assert review(Workspace(load_settings(home), clock=clock)).too_early is None
