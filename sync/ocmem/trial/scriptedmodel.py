"""A scripted model for ``ocmem essai``: an OpenAI-compatible chat-completions server on the
loopback that answers each request of the real OpenCode with what a player decides.

OpenCode reaches it through its bundled ``@ai-sdk/openai-compatible`` provider (the sandbox's
``opencode.json``). A *player* sees each request (the system prompt, the user's messages, the
last tool result) and answers with text (``Say``) or tool calls (``Call``): it plays the model of
one spec test. OpenCode's title request (« title generator », no tools) never reaches a player.

The wire format (:func:`completion_chunks`, :func:`completion`) is also what the developers'
fake model sends (tests/e2e/fake_llm.py): one place for what OpenCode parses.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ocmem.trial import loopback

MODEL_ID = "fake-model"
TITLE_MARKER = "title generator"


@dataclass(frozen=True)
class Say:
    """Answer with text (``finish_reason: stop``)."""

    text: str


@dataclass(frozen=True)
class Call:
    """Answer with one tool call (``finish_reason: tool_calls``)."""

    tool: str
    args: dict[str, Any]


Reply = Say | Call


def content_text(content: Any) -> str:
    """An OpenAI message ``content`` (a string or a list of parts) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part["text"])
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


@dataclass(frozen=True)
class Request:
    """One chat-completions request as OpenCode sent it."""

    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        found = self.body.get("messages")
        return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []

    @property
    def system(self) -> str:
        return "\n\n".join(
            content_text(m.get("content"))
            for m in self.messages
            if m.get("role") in ("system", "developer")
        )

    @property
    def user_texts(self) -> list[str]:
        return [content_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    @property
    def last_tool_result(self) -> str | None:
        """The last message's text when it is a tool's result (the answer to the last call)."""
        last = self.messages[-1] if self.messages else {}
        return content_text(last.get("content")) if last.get("role") == "tool" else None

    @property
    def is_title(self) -> bool:
        return TITLE_MARKER in self.system.lower() and not self.body.get("tools")

    def contains(self, needle: str) -> bool:
        return needle in json.dumps(self.body, ensure_ascii=False)


Player = Callable[[Request], Reply]


def _usage(body: dict[str, Any], produced: str) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion = max(1, len(produced) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _chunk(cid: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def completion_chunks(
    cid: str,
    text: str,
    calls: Sequence[tuple[str, str, dict[str, Any]]],
    body: dict[str, Any],
    chunk_size: int = 16,
) -> Iterator[dict[str, Any]]:
    """The SSE chunks of one streamed answer: ``text`` in pieces, then each ``(id, name, args)``
    call (its name, then its arguments), the finish reason, and the usage when asked."""
    yield _chunk(cid, {"role": "assistant", "content": ""}, None)
    for start in range(0, len(text), max(1, chunk_size)):
        yield _chunk(cid, {"content": text[start : start + chunk_size]}, None)
    produced = text
    for index, (call_id, name, args) in enumerate(calls):
        arguments = json.dumps(args)
        produced += name + arguments
        head = {"index": index, "id": call_id, "type": "function"}
        yield _chunk(
            cid, {"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}, None
        )
        yield _chunk(
            cid, {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}, None
        )
    yield _chunk(cid, {}, "tool_calls" if calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = _usage(body, produced)
        yield {**_chunk(cid, {}, None), "choices": [], "usage": usage}


def completion(
    cid: str, text: str, calls: Sequence[tuple[str, str, dict[str, Any]]], body: dict[str, Any]
) -> dict[str, Any]:
    """The same answer, not streamed."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": _usage(body, text + json.dumps(message.get("tool_calls", []))),
    }


@dataclass
class ScriptedModel:
    """The server. ``play(player)`` sets who answers the next requests; ``requests`` keeps every
    request a player answered (the title requests are not kept)."""

    player: Player = field(default=lambda _request: Say("(aucun scénario en cours)"))
    requests: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def play(self, player: Player) -> None:
        with self._lock:
            self.player = player

    def answer(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
        request = Request(body)
        if request.is_title:
            return "Essai ocmem", []
        with self._lock:
            self.requests.append(request)
            player = self.player
        try:
            reply = player(request)
        except Exception as exc:  # a scenario's bug: said in its proof, the session goes on
            self.errors.append(f"{type(exc).__name__}: {exc}")
            reply = Say(f"(erreur du scénario : {exc})")
        if isinstance(reply, Call):
            return "", [(f"call_{next(self._ids)}", reply.tool, reply.args)]
        return reply.text, []

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(
                        200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}
                    )
                else:
                    self._json(404, {"error": {"message": f"inconnu : {self.path}"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict) or not self.path.rstrip("/").endswith(
                    "/chat/completions"
                ):
                    self._json(400, {"error": {"message": "requête inattendue"}})
                    return
                text, calls = model.answer(body)
                cid = f"chatcmpl-essai-{len(model.requests)}"
                if not body.get("stream"):
                    self._json(200, completion(cid, text, calls, body))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for chunk in completion_chunks(cid, text, calls, body):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = loopback.serve(Handler)
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None, "ScriptedModel.start() d'abord"
        return loopback.url(self._server) + "/v1"

    def stop(self) -> None:
        if self._server is not None:
            loopback.stop(self._server)
            self._server = None


def opencode_config(base_url: str) -> dict[str, Any]:
    """The ``opencode.json`` that points OpenCode at the scripted model (and at nothing else:
    no autoupdate, no LSP, no formatter), also the developers' e2e harness's."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "lsp": False,
        "formatter": False,
        "model": f"fake/{MODEL_ID}",
        "small_model": f"fake/{MODEL_ID}",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",  # bundled in the binary
                "name": "Fake LLM",
                "options": {"baseURL": base_url, "apiKey": "fake-key"},
                "models": {
                    MODEL_ID: {
                        "name": "Fake Model",
                        "tool_call": True,
                        "limit": {"context": 100000, "output": 4096},
                    }
                },
            }
        },
    }
