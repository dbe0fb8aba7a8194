"""A mailbox MCP server for ``ocmem essai`` (stdio, JSON-RPC 2.0, one message a line): one tool,
``lire_courriel``, whose answer is a mail carrying an « instruction » — what a mail read through
MCP can say. OpenCode starts it from the sandbox's ``opencode.json``.

usage: python -m ocmem.trial.mailbox FICHIER  (the mail's text)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOL = "lire_courriel"


def answer(request: dict[str, Any], mail: str) -> dict[str, Any] | None:
    if "id" not in request:
        return None  # a notification
    method = request.get("method")
    result: dict[str, Any]
    if method == "initialize":
        version = (request.get("params") or {}).get("protocolVersion", "2024-11-05")
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "courriel", "version": "1.0.0"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "properties": {}, "additionalProperties": False}
        result = {
            "tools": [
                {"name": TOOL, "description": "Lit le dernier courriel.", "inputSchema": schema}
            ]
        }
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": mail}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"méthode inconnue : {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    mail = Path(sys.argv[1]).read_text(encoding="utf-8")
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line), mail)
            if reply is not None:
                sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
