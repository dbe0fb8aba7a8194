"""A loaded machine's gate, for tests: ``python slow_gate.py DELAY_MS COMMAND...`` (the plugin
adds ``gate`` to the command of plugin.json) runs ``COMMAND...`` and passes the plugin's
requests to it, holding each ``exposure`` request DELAY_MS milliseconds first (the others go at
once, answers come back as they are). It exits with the gate."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time


def main() -> None:
    delay = int(sys.argv[1]) / 1000
    gate = subprocess.Popen(
        sys.argv[2:], stdin=subprocess.PIPE, stdout=sys.stdout, text=True, bufsize=1
    )
    assert gate.stdin is not None
    lock = threading.Lock()

    def send(line: str, after: float) -> None:
        time.sleep(after)
        with lock:
            gate.stdin.write(line)  # type: ignore[union-attr]
            gate.stdin.flush()  # type: ignore[union-attr]

    held: list[threading.Thread] = []
    for line in sys.stdin:
        try:
            op = json.loads(line).get("op")
        except ValueError:
            op = None
        if op == "exposure":
            held.append(threading.Thread(target=send, args=(line, delay)))
            held[-1].start()
        else:
            send(line, 0)
    for thread in held:
        thread.join()
    gate.stdin.close()
    sys.exit(gate.wait())


if __name__ == "__main__":
    main()
