"""Start-up without a registry: what ``ocmem init``'s seed saves at every OpenCode start.

With any local plugin in its config dir, OpenCode 1.18.33 npm-installs ``@opencode-ai/plugin``
into that dir and waits for it before the first model call, unless ``node_modules/`` exists and
``package-lock.json`` lists the package (docs/opencode.md, « Démarrage hors ligne »). Offline,
the install's retries hold every start for over a minute; ``ocmem init`` seeds an empty
``node_modules/`` and such a lock (``ocmem.setup.opencodedir``).

Figure: launch of ``opencode run`` → first request of the main model reaching the fake model
(as ``session_start`` measures it), with no registry reachable: npm's registry is a closed
loopback port (connection refused, as offline) and the harness's refusing proxy stays in place.
The e2e harness's own seeding of the config dir is bypassed: OpenCode sees exactly what the
user's home holds. Variants, each in its own OpenCode environment:

- no plugin: a config dir holding only ``opencode.json`` (the anchor; nothing waits for an
  install);
- ocmem, seeded by init: ``ocmem --home <config dir> init`` as a user runs it;
- ocmem, seed removed: the same, ``node_modules/`` and ``package-lock.json`` deleted (a home
  from before the seed); full mode only, one run (over a minute).

Whether an install was attempted is read from OpenCode's log (« background dependency install
failed », with npm's error) and, where ``strace`` exists, from one extra untimed run per quick
variant counting ``connect()`` calls to the registry's port.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._paths import fake_llm, harness, netguard
from bench.common import (
    INFO,
    SKIP,
    BenchResult,
    Row,
    Sample,
    init_home,
    progress,
    ratio_spread,
    verdict,
    workdir,
)
from bench.opencode import install

NAME = "offline_start"
TITLE = "Start-up without a registry: ocmem init's seed vs OpenCode's plugin install"
TARGET = 1.5  # seeded home / no plugin
INSTALL_FAILED = "background dependency install failed"
SEED_NOTE = "LISEZ-MOI-ocmem.txt"
LOCK = "package-lock.json"

NO_PLUGIN, SEEDED, UNSEEDED = "no plugin", "ocmem, seeded by init", "ocmem, seed removed"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on return: connection refused


def _registry_env(url: str) -> dict[str, str]:
    """npm (OpenCode's in-process Arborist reads ``npm_config_*``) and bun pointed at ``url``."""
    return {
        "npm_config_registry": url,
        "NPM_CONFIG_REGISTRY": url,
        "BUN_CONFIG_REGISTRY": url,
    }


@contextlib.contextmanager
def offline_env(install_: Any, root: Path, registry: str) -> Iterator[Any]:
    """An ``OpenCode`` harness object whose config dir is not seeded by the harness.

    ``OpenCode._prepare`` would link a real ``node_modules`` and copy ``package.json`` and
    ``package-lock.json`` into the config dir; here it writes ``opencode.json`` only (as
    ``test_plugin_e2e.py::test_the_plugin_loads_offline_without_node_modules`` does). Proxy
    attempts are reported by the caller, not asserted.
    """
    h, llm_mod, guard_mod = harness(), fake_llm(), netguard()
    with llm_mod.FakeLLM() as llm, guard_mod.NetGuard() as guard:
        oc = h.OpenCode(
            install=install_, root=root, llm=llm, netguard=guard, extra_env=_registry_env(registry)
        )

        def prepare(_project: Path) -> None:
            oc.config_dir.mkdir(parents=True, exist_ok=True)
            (oc.config_dir / "opencode.json").write_text(json.dumps(oc.config, indent=2) + "\n")

        oc._prepare = prepare
        yield oc


@dataclasses.dataclass
class Variant:
    name: str
    oc: Any
    firsts: list[float] = dataclasses.field(default_factory=list)
    install_errors: list[str] = dataclasses.field(default_factory=list)  # one per failed install
    connects: int | None = None  # connect() calls to the registry (strace probe), None: no probe

    @property
    def home(self) -> Path:
        return Path(self.oc.config_dir)

    def run(self, *, timeout: float = 300.0) -> float:
        """One ``opencode run`` answered at once; launch → first main request (s)."""
        llm = fake_llm()
        self.oc.llm.set_script(llm.Text("fini"), final_text="fini")
        before_requests = len(self.oc.llm.requests)
        before_log = {p: p.stat().st_size for p in self.oc.log_files()}
        launch = time.time()
        result = self.oc.run(self.oc.project(), "bonjour", timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"opencode run failed:\n{self.oc.debug_report(result)}")
        main = [r for r in self.oc.llm.requests[before_requests:] if r.kind == "main"]
        if not main:
            raise RuntimeError(f"no model call:\n{self.oc.debug_report(result)}")
        for path in self.oc.log_files():
            data = path.read_bytes()
            start = before_log.get(path, 0)  # bytes: this run's lines only
            new = data[start if start <= len(data) else 0 :].decode(errors="replace")
            for line in new.splitlines():
                if INSTALL_FAILED in line:
                    self.install_errors.append(_npm_reason(line))
        return float(main[0].time) - launch

    def probe_connects(self, port: int, trace: Path) -> int | None:
        """One untimed run under ``strace -f -e trace=connect``: connections to ``port``."""
        strace = shutil.which("strace")
        if strace is None:
            return None
        original = self.oc.install
        wrapper = Path(self.oc.root) / "opencode-connects"
        wrapper.write_text(
            f'#!/bin/sh\nexec "{strace}" -f -qq -e trace=connect -o "{trace}" '
            f'"{original.binary}" "$@"\n'
        )
        wrapper.chmod(0o755)
        self.oc.install = dataclasses.replace(original, binary=wrapper)
        try:
            self.run()  # its time is discarded; its log lines count (evidence, not timing)
        finally:
            self.oc.install = original
        text = trace.read_text(errors="replace") if trace.exists() else ""
        self.connects = len(re.findall(rf"connect\(.*sin_port=htons\({port}\)", text))
        return self.connects

    def seed_state(self) -> str:
        """What the config dir holds of the seed after the runs."""
        modules = self.home / "node_modules"
        if not modules.is_dir():
            held = "no node_modules/"
        else:
            names = sorted(p.name for p in modules.iterdir())
            held = "node_modules/ holds " + (", ".join(names) if names else "nothing")
        return held + ("; package-lock.json" if (self.home / LOCK).exists() else "; no lock")


def _npm_reason(line: str) -> str:
    """``request to http://127.0.0.1:P/@opencode-ai%2fplugin failed, reason: ECONNREFUSED``."""
    found = re.search(r"request to (\S+) failed, reason: ([A-Z_]+)", line)
    if found:
        return f"{found.group(2)} from {found.group(1)}"
    found = re.search(r'error="([^"]{0,160})', line)
    return found.group(1) if found else line[-160:]


def sec(sample: Sample) -> str:
    return sample.fmt("s", 1.0, 2)


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    found = install(quick)
    if found is None:
        result.add(
            Row("OpenCode runs", "OpenCode not installed (run the e2e suite once)", verdict=SKIP)
        )
        return result
    reps = 1 if quick else 5
    port = _closed_port()
    registry = f"http://127.0.0.1:{port}"
    with workdir(NAME) as root, contextlib.ExitStack() as stack:

        def variant(name: str, folder: str, *, ocmem: bool) -> Variant:
            v = Variant(name, stack.enter_context(offline_env(found, root / folder, registry)))
            if ocmem:
                init_home(v.home)  # `ocmem --home <config dir> init`, as a user runs it
            return v

        anchor = variant(NO_PLUGIN, "none", ocmem=False)
        seeded = variant(SEEDED, "seeded", ocmem=True)
        lock_text = (seeded.home / LOCK).read_text() if (seeded.home / LOCK).exists() else None
        seed_before = seeded.seed_state()
        variants = {NO_PLUGIN: anchor, SEEDED: seeded}
        unseeded: Variant | None = None
        if not quick:
            unseeded = variant(UNSEEDED, "unseeded", ocmem=True)
            shutil.rmtree(unseeded.home / "node_modules", ignore_errors=True)
            (unseeded.home / LOCK).unlink(missing_ok=True)
            if (unseeded.home / "package.json").exists():
                raise RuntimeError("ocmem init wrote a package.json: the variant would differ")

        timed = [anchor, seeded]
        # The first run of each environment is discarded: the strace probe when strace exists
        # (the first, cold run is the slowest, so a background install has the most time to
        # reach the registry), else a plain warm-up (full mode only).
        probe = shutil.which("strace") is not None
        if probe or not quick:
            progress("first run of each (discarded): " + ("strace probe" if probe else "warm-up"))
            for v in timed:
                if probe:
                    v.probe_connects(port, Path(v.oc.root) / "connects.trace")
                else:
                    v.run()
        progress(f"{reps} run(s) of each of {NO_PLUGIN!r}, {SEEDED!r}; registry {registry}")
        for rep in range(reps):
            for v in timed if rep % 2 == 0 else timed[::-1]:
                v.firsts.append(v.run())
        if unseeded is not None:
            progress(f"1 run of {UNSEEDED!r} (OpenCode's install retries: over a minute)")
            unseeded.firsts.append(unseeded.run())
            variants[UNSEEDED] = unseeded
        proxy = sum(len(v.oc.netguard.attempts) for v in variants.values())
        refused = [e for v in variants.values() for e in v.install_errors]

        a = Sample.of(anchor.firsts)
        b = Sample.of(seeded.firsts)
        laid = lock_text is not None and (seeded.home / "node_modules" / SEED_NOTE).is_file()
        lock_kept = laid and (seeded.home / LOCK).read_text() == lock_text

        def attempts(v: Variant) -> str:
            logged = (
                f"« {INSTALL_FAILED} » ×{len(v.install_errors)} ({v.install_errors[0]})"
                if v.install_errors
                else f"no « {INSTALL_FAILED} » in the log"
            )
            probe = (
                "no strace probe"
                if v.connects is None
                else f"{v.connects} connection(s) to the registry (strace probe)"
            )
            return f"{logged}; {probe}"

        result.add(
            Row(
                f"launch → first model call, {NO_PLUGIN} (anchor)",
                sec(a),
                "config dir: opencode.json only",
                "1.00×",
                "anchor",
                INFO,
            ),
            Row(
                f"install attempted, {NO_PLUGIN}",
                attempts(anchor),
                "",
                "",
                "reported (started in the background, awaited only with a plugin)",
                INFO,
            ),
            Row(
                f"launch → first model call, {SEEDED}",
                sec(b),
                f"{NO_PLUGIN}: {sec(a)}",
                ratio_spread(b, a),
                f"≤ {TARGET:g}× {NO_PLUGIN}",
                verdict(b.median <= TARGET * a.median),
            ),
            Row(
                f"install attempted, {SEEDED}",
                attempts(seeded),
                f"seed laid by init: {seed_before}; after the runs: {seeded.seed_state()}"
                + ("" if lock_kept else " (no seed, or the lock changed!)"),
                "",
                "no install; seed untouched",
                verdict(
                    not seeded.install_errors
                    and not seeded.connects
                    and lock_kept
                    and seeded.seed_state() == seed_before
                ),
            ),
        )
        if unseeded is not None:
            c = Sample.of(unseeded.firsts)
            result.add(
                Row(
                    f"launch → first model call, {UNSEEDED}",
                    sec(c),
                    f"{NO_PLUGIN}: {sec(a)}; {SEEDED}: {sec(b)}",
                    f"{c.median / a.median:.1f}× {NO_PLUGIN}; {c.median / b.median:.1f}× seeded",
                    "reported (a home from before the seed)",
                    INFO,
                ),
                Row(
                    f"install attempted, {UNSEEDED}",
                    attempts(unseeded),
                    f"after: {unseeded.seed_state()}",
                    "",
                    "reported",
                    INFO,
                ),
            )
        result.add(
            Row(
                "no registry reachable",
                f"requests through the proxy: {proxy}; "
                f"npm registry {registry} (closed port)"
                + (f"; npm's error: {refused[0]}" if refused else "")
                + (
                    ""
                    if anchor.connects is None
                    else f"; npm's connections to it, {NO_PLUGIN}, probe run: {anchor.connects}"
                ),
                "",
                "",
                "0 through the proxy; npm refused",
                verdict(proxy == 0 and all(e.startswith("ECONNREFUSED") for e in refused)),
            )
        )
        result.note(
            "Registry: npm_config_registry / NPM_CONFIG_REGISTRY / BUN_CONFIG_REGISTRY point at "
            "a closed loopback port (connection refused), and the harness's refusing proxy "
            "stays in place; the harness's own seeding of the config dir is bypassed. "
            "OpenCode logs the install only when it fails (« install attempted » counts the log "
            "lines of every run, discarded ones too). Without a plugin the install is started "
            "but not awaited, and the run often ends before npm even connects; with a plugin "
            "any attempt is awaited, so it fails and is logged. The strace probe (the first, "
            "cold run of each quick variant, discarded) counts connect() calls to the "
            "registry's port."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
