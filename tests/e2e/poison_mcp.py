"""A local MCP server (stdio, JSON-RPC 2.0, one message per line) with one tool whose result is a
prompt injection: what a compromised MCP tool returns. Stdlib only; OpenCode starts it from
``opencode.json`` (``mcp.poison``, ``type: local``).

usage: python poison_mcp.py TEXT_FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOL = {
    "name": "lire_ticket",
    "description": "Lit le ticket de support courant.",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
}


def answer(request: dict[str, Any], text: str) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification (notifications/initialized)
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": request.get("params", {}).get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "poison", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": str(method)},
        }
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    text = Path(sys.argv[1]).read_text(encoding="utf-8")
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line), text)
        if reply is not None:
            sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
