"""Fixtures of the OpenCode end-to-end suite (see README.md here): a hermetic OpenCode with a
scripted model and a refusing network proxy."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from e2e.fake_llm import FakeLLM
from e2e.harness import E2EUnavailable, OpenCode, OpenCodeInstall, ensure_install, require_e2e
from e2e.netguard import NetGuard


@pytest.fixture(scope="session")
def opencode_install() -> OpenCodeInstall:
    """Session-wide install (cached across sessions); skips or fails if unavailable."""
    try:
        return ensure_install()
    except E2EUnavailable as exc:
        require_e2e(str(exc))


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
def netguard() -> Iterator[NetGuard]:
    with NetGuard() as guard:
        yield guard


@pytest.fixture
def oc(
    opencode_install: OpenCodeInstall,
    fake_llm: FakeLLM,
    netguard: NetGuard,
    tmp_path: Path,
) -> Iterator[OpenCode]:
    """A hermetic OpenCode environment; at teardown asserts the netguard saw nothing. A failed
    test's report carries the debug report (fake LLM exchange, netguard, log tail)."""
    env = OpenCode(install=opencode_install, root=tmp_path / "e2e", llm=fake_llm, netguard=netguard)
    try:
        yield env
    finally:
        for server in list(env.servers):
            if server.process.poll() is None:
                server.stop(dispose=False)
    if not env.allow_outbound:
        netguard.assert_no_attempts()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The debug report goes into the failed test's own report: it is shown with the failure,
    from a pytest-xdist worker too."""
    report: pytest.TestReport = yield
    env = getattr(item, "funcargs", {}).get("oc")
    if report.failed and report.when in ("call", "teardown") and isinstance(env, OpenCode):
        report.sections.append(("e2e debug report", env.debug_report()))
    return report
