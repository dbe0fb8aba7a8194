"""Wall time of ``ocmem journal add``, against starting the same Python and doing nothing.

Subject: ``ocmem --home H journal add`` with the entry as JSON on stdin (the form the agent and
the plugin use), started as the plugin starts it — the command ``ocmem init`` wrote to
``.ocmem/plugin.json``: the console script next to the interpreter when there is one, else
``python -m ocmem`` (also reported) —, a real append with lock and fsync, into a home made by
``ocmem init``: once with an empty journal, once with a
journal of 10 000 entries (2 000 with --quick). The append is one write at the end of the file,
so the two must cost the same (target: ≤ 1.2×). The options form (``--titre … --resultat
réussi``) is reported too. Anchor: ``python -c pass`` with the same interpreter, so what is
measured is what ocmem adds on top of an interpreter start: imports, configuration,
validation, the write. Also reported: ``python -X importtime`` top offenders, and whether httpx
(only needed to sync) is imported by this local command.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

from bench.common import (
    PYTHON,
    BenchResult,
    Row,
    init_home,
    interleave,
    ms,
    ocmem_cmd,
    ocmem_env,
    progress,
    ratio_spread,
    time_command,
    verdict,
    workdir,
)
from bench.journal_search import write_journal

NAME = "journal_add"
TITLE = "`ocmem journal add` wall time"
TARGET = 4.0
SIZE_TARGET = 1.2  # a 10 000-entry journal against an empty one
ENTRY = {
    "titre": "Mise à jour du VPS",
    "tags": ["vps", "apt"],
    "demande": "mettre à jour les paquets",
    "fait": "apt upgrade, redémarrage de nginx",
    "piege": "nginx avait une conf invalide",
    "lecon": "tester la conf avec nginx -t avant de redémarrer",
    "resultat": "réussi",
}
ENTRY_JSON = json.dumps(ENTRY, ensure_ascii=False)
OPTIONS = (
    "journal",
    "add",
    "--titre",
    "Mise à jour du VPS",
    "--tags",
    "vps apt",
    "--demande",
    "mettre à jour les paquets",
    "--fait",
    "apt upgrade, redémarrage de nginx",
    "--piege",
    "nginx avait une conf invalide",
    "--lecon",
    "tester la conf avec nginx -t avant de redémarrer",
    "--resultat",
    "réussi",
)
SYNC_ONLY = ("httpx", "httpcore", "tenacity", "anyio", "ssl", "certifi")


def plugin_cmd(home: Path, *args: str) -> list[str]:
    """``ocmem --home HOME ARGS`` started the way the OpenCode plugin starts it."""
    command = json.loads((home / ".ocmem" / "plugin.json").read_text())["command"]
    return [*map(str, command), "--home", str(home), *args]


def importtime(
    cmd: list[str], env: dict[str, str], stdin: str = ""
) -> list[tuple[str, int, int, int]]:
    """``-X importtime`` of one run: (module, depth, self µs, cumulative µs) in import order."""
    done = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    rows: list[tuple[str, int, int, int]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative, name = line.split(":", 1)[1].split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2  # one space, then two per level
        rows.append((name.strip(), depth, int(self_us), int(cumulative)))
    return rows


def _median_profile(
    cmd: list[str], env: dict[str, str], runs: int, stdin: str = ""
) -> dict[str, tuple[int, int, int]]:
    """Per module: (depth, median self µs, median cumulative µs) over ``runs`` runs."""
    seen: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for _ in range(runs):
        for name, depth, self_us, cum in importtime(cmd, env, stdin):
            seen[name].append((depth, self_us, cum))
    return {
        name: (
            values[0][0],
            int(statistics.median(v[1] for v in values)),
            int(statistics.median(v[2] for v in values)),
        )
        for name, values in seen.items()
    }


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    reps = 5 if quick else 20
    profiles = 3 if quick else 7
    env = ocmem_env()
    bare = [PYTHON, "-c", "pass"]
    entries = 2_000 if quick else 10_000
    with workdir(NAME) as root:
        home: Path = init_home(root / "home")
        add = plugin_cmd(home, "journal", "add")
        with_module = ocmem_cmd(home, "journal", "add")
        with_options = ocmem_cmd(home, *OPTIONS)
        big = init_home(root / "big")
        size = write_journal(big, entries)
        add_big = plugin_cmd(big, "journal", "add")

        # What the JSON form imports, module by module (also gives the import floor).
        profile = _median_profile(with_module, env, profiles, ENTRY_JSON)
        baseline = _median_profile(bare, env, profiles)
        own = {n: v for n, v in profile.items() if n not in baseline}
        top_level = [n for n, (depth, _s, _c) in own.items() if depth == 0]
        floor = [PYTHON, "-c", "import " + ", ".join(top_level)]

        progress(
            f"{reps} × journal add (empty journal, {entries}-entry journal of {size / 1e6:.1f} MB, "
            "options), python -c pass, import floor"
        )
        subject, on_big, module, options, anchor, imports = interleave(
            reps,
            lambda: time_command(add, env=env, stdin=ENTRY_JSON),
            lambda: time_command(add_big, env=env, stdin=ENTRY_JSON),
            lambda: time_command(with_module, env=env, stdin=ENTRY_JSON),
            lambda: time_command(with_options, env=env),
            lambda: time_command(bare, env=env),
            lambda: time_command(floor, env=env),
            warmup=2,
        )
        ratio = subject.median / anchor.median
        big_ratio = on_big.median / anchor.median
        growth = on_big.median / subject.median
        result.add(
            Row(
                f"ocmem journal add on a {entries}-entry journal ({size / 1e6:.1f} MB)",
                ms(on_big),
                f"the same on an empty journal: {ms(subject)}",
                ratio_spread(on_big, subject),
                f"≤ {SIZE_TARGET}×",
                verdict(growth <= SIZE_TARGET),
            ),
            Row(
                f"ocmem journal add on a {entries}-entry journal, against python -c pass",
                ms(on_big),
                f"python -c pass: {ms(anchor)}",
                ratio_spread(on_big, anchor),
                f"≤ {TARGET:.0f}×",
                verdict(big_ratio <= TARGET),
            ),
        )
        result.add(
            Row(
                "ocmem journal add (JSON on stdin, as the agent sends it), empty journal",
                ms(subject),
                f"python -c pass: {ms(anchor)}",
                ratio_spread(subject, anchor),
                f"≤ {TARGET:.0f}×",
                verdict(ratio <= TARGET),
            ),
            Row(
                "python -m ocmem journal add (JSON; runpy on top of the console script)",
                ms(module),
                f"python -c pass: {ms(anchor)}",
                ratio_spread(module, anchor),
                "reported",
            ),
            Row(
                "ocmem journal add --titre … (options, through click)",
                ms(options),
                f"python -c pass: {ms(anchor)}",
                ratio_spread(options, anchor),
                "reported",
            ),
            Row(
                "import floor: python -c 'import <what the JSON form imports>'",
                ms(imports),
                f"python -c pass: {ms(anchor)}",
                ratio_spread(imports, anchor),
                "reported: the part of the time spent importing",
            ),
        )

        sync_only = sorted(n for n in own if n.split(".")[0] in SYNC_ONLY)
        total = sum(cum for _n, (depth, _s, cum) in own.items() if depth == 0)
        result.add(
            Row(
                "modules only needed to sync, imported by journal add",
                ", ".join(sync_only) if sync_only else "none (no httpx)",
                "",
                "",
                "no httpx on local commands",
                verdict(not any(n.split(".")[0] == "httpx" for n in own)),
            ),
            Row(
                "import time on top of python -c pass (-X importtime)",
                f"{total / 1000:.1f} ms (sum of top-level cumulative, median of {profiles} runs)",
                "",
                "",
                "reported",
            ),
        )
        tops = sorted(
            ((cum, n) for n, (depth, _s, cum) in own.items() if depth == 0), reverse=True
        )[:8]
        # A package's cost is the cumulative time of its root module where it was first imported.
        roots = sorted(
            ((cum, n) for n, (_d, _s, cum) in own.items() if "." not in n and n != "ocmem"),
            reverse=True,
        )[:8]
        by_self = sorted(((s, n) for n, (_d, s, _c) in own.items()), reverse=True)[:10]
        result.note(
            "importtime, top-level imports (cumulative): "
            + ", ".join(f"{n} {c / 1000:.1f} ms" for c, n in tops)
        )
        result.note(
            "importtime, heaviest packages (cumulative, where first imported): "
            + ", ".join(f"{n} {c / 1000:.1f} ms" for c, n in roots)
        )
        result.note(
            "importtime, biggest self times: "
            + ", ".join(f"{n} {s / 1000:.1f} ms" for s, n in by_self)
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
