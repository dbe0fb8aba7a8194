"""The one place where ``sys.path`` is touched: the test helpers live under ``tests/``.

``support.sbserver`` (the SilverBullet-faithful server) and ``e2e.harness`` (real OpenCode with a
scripted fake model) are test code, not part of the ocmem package, so they are not importable
by default. ``tests_on_path()`` puts ``tests/`` on ``sys.path`` (idempotent), exactly as pytest's
``pythonpath = ["tests"]`` does.

For the type checker, the server is imported as ``tests.support.sbserver`` (the repository root is
the package root of ``bench``, and ``tests`` is a namespace package), so ``FakeSilverBullet`` is
fully typed. The e2e harness imports ``e2e.*`` absolutely, which mypy cannot resolve from here,
so ``harness()`` returns the module untyped and ``bench.opencode`` wraps what it uses.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
PLUGIN_SOURCE = REPO / "plugin" / "ocmem.ts"
BENCH = REPO / "bench"


def tests_on_path() -> None:
    """Make ``support.*`` and ``e2e.*`` importable."""
    entry = str(TESTS)
    if entry not in sys.path:
        sys.path.insert(0, entry)


if TYPE_CHECKING:
    from tests.support.sbserver import FakeSilverBullet as FakeSilverBullet
else:
    tests_on_path()
    from support.sbserver import FakeSilverBullet as FakeSilverBullet


def harness() -> ModuleType:
    """``e2e.harness`` (imports pytest and httpx: only loaded by the OpenCode benchmarks)."""
    tests_on_path()
    return importlib.import_module("e2e.harness")


def fake_llm() -> ModuleType:
    """``e2e.fake_llm`` (``Text``, ``ToolCalls``, ``FakeLLM``)."""
    tests_on_path()
    return importlib.import_module("e2e.fake_llm")


def netguard() -> ModuleType:
    """``e2e.netguard`` (``NetGuard``)."""
    tests_on_path()
    return importlib.import_module("e2e.netguard")


__all__ = [
    "BENCH",
    "PLUGIN_SOURCE",
    "REPO",
    "TESTS",
    "FakeSilverBullet",
    "fake_llm",
    "harness",
    "netguard",
    "tests_on_path",
]
