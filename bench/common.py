"""Shared pieces of the benchmarks: samples and their spread, result rows, subprocess timing and
peak RSS, ocmem homes and SilverBullet spaces.

Every figure is printed next to an anchor measured in the same run, and judged on the ratio
(machines are noisy; nothing here asserts an absolute time).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from bench._paths import REPO, FakeSilverBullet

PYTHON = sys.executable
"""The interpreter running the benchmarks (the venv's): used for ocmem and for every anchor."""

TOKEN = "bench-token-0123456789abcdef"
"""Bearer token of the benchmark servers (auth on, as in a real deployment)."""


# --------------------------------------------------------------------------------------------
# Samples


@dataclass(frozen=True)
class Sample:
    """Repeated measurements of one thing (seconds, bytes, counts...)."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Sample:
        if not values:
            raise ValueError("empty sample")
        return cls(tuple(values))

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def n(self) -> int:
        return len(self.values)

    def quartiles(self) -> tuple[float, float]:
        if self.n < 4:
            return self.low, self.high
        q = statistics.quantiles(self.values, n=4, method="inclusive")
        return q[0], q[2]

    def fmt(self, unit: str = "ms", scale: float = 1e3, digits: int = 1) -> str:
        """``12.3 ms [11.9–13.0] n=20``: median, then min–max."""
        f = f"{{:.{digits}f}}"
        med = f.format(self.median * scale)
        if self.n == 1:
            return f"{med} {unit} (n=1)"
        lo, hi = f.format(self.low * scale), f.format(self.high * scale)
        return f"{med} {unit} [{lo}–{hi}] n={self.n}"


def ms(sample: Sample) -> str:
    return sample.fmt("ms", 1e3, 1 if sample.median < 10 else 0)


def us(sample: Sample) -> str:
    return sample.fmt("µs", 1e6, 2)


def mib(sample: Sample) -> str:
    return sample.fmt("MiB", 1 / 1024 / 1024, 1)


def ratio_spread(subject: Sample, anchor: Sample) -> str:
    """Ratio of medians, with the range of per-repetition ratios when the samples pair up."""
    med = subject.median / anchor.median
    if subject.n == anchor.n and subject.n > 1:
        pairs = [s / a for s, a in zip(subject.values, anchor.values, strict=True)]
        return f"{med:.2f}× [{min(pairs):.2f}–{max(pairs):.2f}]"
    return f"{med:.2f}×"


# --------------------------------------------------------------------------------------------
# Results


PASS, MISS, INFO, SKIP = "PASS", "MISS", "INFO", "SKIP"


@dataclass(frozen=True)
class Row:
    """One line of the results table."""

    figure: str
    value: str
    anchor: str = ""
    ratio: str = ""
    target: str = ""
    verdict: str = INFO


@dataclass
class BenchResult:
    name: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, *rows: Row) -> None:
        self.rows.extend(rows)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def verdicts(self) -> list[str]:
        return [r.verdict for r in self.rows if r.verdict in (PASS, MISS)]


def verdict(ok: bool) -> str:
    return PASS if ok else MISS


def machine() -> dict[str, str]:
    """What the figures depend on: CPUs, kernel, Python, date."""
    return {
        "nproc": str(os.cpu_count()),
        "kernel": platform.release(),
        "python": f"{platform.python_version()} ({PYTHON})",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def progress(text: str) -> None:
    """Progress goes to stderr, results to stdout."""
    print(f"  · {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Timing


def clock(fn: Callable[[], object]) -> float:
    """Wall time of ``fn()`` in seconds."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleave(reps: int, *fns: Callable[[], float], warmup: int = 1) -> list[Sample]:
    """Run each measuring function ``reps`` times, alternating them (drift hits all alike).

    Each function returns its own measurement. ``warmup`` rounds are run first and discarded.
    """
    for _ in range(warmup):
        for fn in fns:
            fn()
    results: list[list[float]] = [[] for _ in fns]
    for rep in range(reps):
        order = list(enumerate(fns))
        if rep % 2:
            order.reverse()
        for i, fn in order:
            results[i].append(fn())
    return [Sample.of(r) for r in results]


def ocmem_env(token: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without any OCMEM_* setting, plus the token if given.

    ``PYTHONDONTWRITEBYTECODE`` is dropped too: an installed ocmem has its bytecode compiled
    (pip does it), and a warm-up run writes it here, so no measured run recompiles sources.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OCMEM_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    if token:
        env["OCMEM_SILVERBULLET_TOKEN"] = token
    env.update(extra or {})
    return env


def time_command(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    cwd: Path | None = None,
    check: bool = True,
) -> float:
    """Wall time of one command, from spawn to exit, output discarded (seconds)."""
    start = time.perf_counter()
    done = subprocess.run(
        list(cmd),
        input=stdin.encode() if stdin is not None else None,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if check and done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}"
        )
    return elapsed


_RSS_LAUNCHER = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss(cmd: Sequence[str], *, env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(exit code, peak RSS in bytes) of one command, read from ``wait4``'s rusage.

    ``ru_maxrss`` survives ``execve``: a child forked from this (large) process would start
    with our peak. So a small launcher (``python -S``, about 10 MiB) spawns the command and
    reports its rusage; that launcher's size is the floor of what can be measured. On Linux the
    figure is the larger of the command's own peak and that of the children it waited for
    (ocmem's ``git`` calls are counted too).
    """
    done = subprocess.run(
        [PYTHON, "-S", "-c", _RSS_LAUNCHER, *cmd],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
        check=True,
    )
    code, kib = done.stdout.split()
    return int(code), int(kib) * 1024


def ocmem_cmd(home: Path, *args: str) -> list[str]:
    """``python -m ocmem --home HOME ...``: the form the OpenCode plugin spawns."""
    return [PYTHON, "-m", "ocmem", "--home", str(home), *args]


# --------------------------------------------------------------------------------------------
# Homes and spaces


@contextlib.contextmanager
def workdir(name: str) -> Iterator[Path]:
    """A scratch directory on the same disk as a real home (``$TMPDIR``), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=f"ocmem-bench-{name}-"))
    try:
        yield path
    finally:
        _rmtree(path)


def _rmtree(path: Path) -> None:
    # pulled files are installed read-only (0444): make them writable before removing
    def onerror(func: Callable[..., object], target: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o755)
            os.chmod(target, 0o644)
            func(target)

    shutil.rmtree(path, onerror=onerror)


def sync_yaml(url: str, **extra: object) -> str:
    """``ocmem.yaml`` for a sync home (short retry waits: the fake server never needs them)."""
    lines = ["silverbullet:", f"  url: {url}", "  retry_wait_seconds: 0.01"]
    lines += [f"  {key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def init_home(home: Path, yaml: str = "", *, token: str | None = None) -> Path:
    """``ocmem --home HOME init`` (the user's own set-up step), with ``ocmem.yaml`` first.

    HOME is an empty folder next to the home: init looks there for another memory system
    (``~/.claude/skills``…), and the machine's own must not make it stop and ask."""
    home.mkdir(parents=True, exist_ok=True)
    if yaml:
        (home / "ocmem.yaml").write_text(yaml)
    user = home.parent / f"{home.name}-user"
    user.mkdir(exist_ok=True)
    done = subprocess.run(
        ocmem_cmd(home, "init"),
        env=ocmem_env(token, {"HOME": str(user)}),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ocmem init failed: {done.stderr}")
    return home


def clone_home(template: Path, target: Path) -> Path:
    """A fresh copy of a home (permissions and symlinks kept)."""
    if target.exists():
        _rmtree(target)
    shutil.copytree(template, target, symlinks=True)
    return target


def skill_text(name: str, lines: int = 20) -> str:
    body = "\n".join(f"- Étape {i} de {name} : vérifier l'état, puis agir." for i in range(lines))
    return (
        f"---\nname: {name}\ndescription: Procédure {name} pour le VPS. À utiliser quand {name}.\n"
        f"---\n\n# {name}\n\n{body}\n"
    )


def page_text(i: int, size: int = 1500) -> str:
    """A human page of about ``size`` bytes."""
    line = f"- Note {i} : réunion, suivi du projet, liens et idées diverses.\n"
    return f"# Page {i}\n\n" + line * max(1, size // len(line))


@dataclass(frozen=True)
class SpaceLayout:
    """What a space holds: the files ocmem pulls, and unrelated human pages."""

    skills: int
    files_per_skill: int
    unrelated: int

    @property
    def mapped(self) -> int:
        return 2 + self.skills * self.files_per_skill  # + AGENTS.md + MEMORY.md

    @property
    def total(self) -> int:
        return self.mapped + self.unrelated


def fill_space(sb: FakeSilverBullet, layout: SpaceLayout, *, start: int = 0) -> list[str]:
    """Write the layout into the server's space; return the mapped (pulled) names."""
    mapped = ["Agents/AGENTS.md", "Agents/Memory/MEMORY.md"]
    if start == 0:
        sb.write("Agents/AGENTS.md", "# Agents\n\nRègles de l'agent.\n" + page_text(0, 800))
        sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n")
        for s in range(layout.skills):
            name = f"skill-{s:02d}"
            sb.write(f"Agents/Skills/{name}/SKILL.md", skill_text(name))
            for f in range(1, layout.files_per_skill):
                sb.write(f"Agents/Skills/{name}/ref-{f:02d}.md", page_text(f, 1200))
    for s in range(layout.skills):
        name = f"skill-{s:02d}"
        mapped.append(f"Agents/Skills/{name}/SKILL.md")
        mapped += [f"Agents/Skills/{name}/ref-{f:02d}.md" for f in range(1, layout.files_per_skill)]
    for i in range(start, start + layout.unrelated):
        sb.write(f"Notes/{i // 100:03d}/page-{i:05d}.md", page_text(i))
    return mapped


def repo_root() -> Path:
    return REPO


def sequential_reads(url: str, names: list[str]) -> float:
    """Seconds for the listing, then one GET per name, one after the other on one keep-alive
    client (what a client without a metadata cache does)."""
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "X-Sync-Mode": "true"}
    start = time.perf_counter()
    with httpx.Client(base_url=url, headers=headers, trust_env=False) as client:
        client.get("/.fs").raise_for_status()
        for name in names:
            client.get(f"/.fs/{name}").raise_for_status()
    return time.perf_counter() - start
