"""A stand-in SilverBullet MCP server (stdio, JSON-RPC 2.0, one message per line), like the public
ones (``mcp-server-silverbullet``, ``kesor/silverbullet-mcp``): it holds a token for the whole
space and writes any page it is asked to, through SilverBullet's ``/.fs`` API. Stdlib only;
OpenCode starts it from ``opencode.json`` (``type: local``) with ``SB_URL`` and ``SB_AUTH_TOKEN``
in its environment. Every request it sends carries ``User-Agent: sb-mcp-standin``, so a test
tells its requests from ocmem's in the server's log. It checks nothing: whatever reaches it is
written (issue 23: the plugin must refuse before the call runs).

usage: python silverbullet_mcp.py
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

AGENT = "sb-mcp-standin"
PAGE = {"type": "string", "description": "Nom de la page (ex. Notes/Idée)"}
TOOLS = [
    {
        "name": "read_page",
        "description": "Lit une page de l'espace SilverBullet.",
        "inputSchema": {"type": "object", "properties": {"page": PAGE}, "required": ["page"]},
    },
    {
        "name": "write_page",
        "description": "Écrit (crée ou remplace) une page de l'espace SilverBullet.",
        "inputSchema": {
            "type": "object",
            "properties": {"page": PAGE, "content": {"type": "string"}},
            "required": ["page", "content"],
        },
    },
    {
        "name": "rename_page",
        "description": "Renomme une page.",
        "inputSchema": {
            "type": "object",
            "properties": {"from": PAGE, "to": PAGE},
            "required": ["from", "to"],
        },
    },
    {
        "name": "delete_page",
        "description": "Supprime une page.",
        "inputSchema": {"type": "object", "properties": {"page": PAGE}, "required": ["page"]},
    },
]


def fs(method: str, page: str, body: bytes | None = None) -> bytes:
    name = page if page.endswith(".md") else page + ".md"
    url = os.environ["SB_URL"].rstrip("/") + "/.fs/" + quote(name.lstrip("/"), safe="/")
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Authorization", f"Bearer {os.environ['SB_AUTH_TOKEN']}")
    request.add_header("X-Sync-Mode", "true")
    request.add_header("User-Agent", AGENT)
    if body is not None:
        request.add_header("Content-Type", "text/markdown")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a loopback server
    with opener.open(request, timeout=10) as answer:
        return bytes(answer.read())


def call(name: str, args: dict[str, Any]) -> str:
    if name == "read_page":
        return fs("GET", str(args["page"])).decode("utf-8")
    if name == "write_page":
        fs("PUT", str(args["page"]), str(args["content"]).encode("utf-8"))
        return f"page {args['page']} écrite"
    if name == "rename_page":
        text = fs("GET", str(args["from"]))
        fs("PUT", str(args["to"]), text)
        fs("DELETE", str(args["from"]))
        return f"page {args['from']} renommée en {args['to']}"
    if name == "delete_page":
        fs("DELETE", str(args["page"]))
        return f"page {args['page']} supprimée"
    raise KeyError(name)


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification (notifications/initialized)
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": request.get("params", {}).get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "silverbullet-standin", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = request.get("params", {})
        try:
            text = call(str(params.get("name")), dict(params.get("arguments") or {}))
            result = {"content": [{"type": "text", "text": text}]}
        except (KeyError, OSError, urllib.error.URLError) as exc:
            result = {"content": [{"type": "text", "text": f"échec : {exc}"}], "isError": True}
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
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
