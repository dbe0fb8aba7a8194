"""Fixtures of the OpenCode end-to-end suite (see README.md here): a hermetic OpenCode with a
scripted model and a refusing network proxy."""

from __future__ import annotations

from collections.abc import Iterator
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
    request: pytest.FixtureRequest,
    opencode_install: OpenCodeInstall,
    fake_llm: FakeLLM,
    netguard: NetGuard,
    tmp_path: Path,
) -> Iterator[OpenCode]:
    """A hermetic OpenCode environment; at teardown asserts the netguard saw nothing and, if
    the test failed, prints the debug report (fake LLM exchange, netguard, log tail)."""
    env = OpenCode(install=opencode_install, root=tmp_path / "e2e", llm=fake_llm, netguard=netguard)
    failed_before = request.session.testsfailed
    try:
        yield env
    finally:
        for server in list(env.servers):
            if server.process.poll() is None:
                server.stop(dispose=False)
        if request.session.testsfailed > failed_before:
            reporter = request.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line("")
                reporter.write_line(f"===== e2e debug report for {request.node.nodeid} =====")
                for line in env.debug_report().splitlines():
                    reporter.write_line(line)
    if not env.allow_outbound:
        netguard.assert_no_attempts()
