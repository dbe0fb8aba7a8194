"""A scripted, OpenAI-compatible chat-completions server for end-to-end tests (stdlib only).

OpenCode talks to it through the bundled ``@ai-sdk/openai-compatible`` provider. Every request
body is recorded, so a test can assert what reached the model (messages, tools, system prompt,
tool results). Replies come from a *script*:

    llm.set_script(
        ToolCalls([("bash", {"command": "echo 1", "description": "x"})]),
        Text("done"),
    )

Each main-agent request consumes the next step. A step is

The wire format (SSE chunks, the non-streamed answer) is the packaged scripted model's
(``ocmem.trial.scriptedmodel``, what ``ocmem essai`` plays OpenCode's model with).

* ``Text("...")`` - a plain assistant answer (``finish_reason: stop``);
* ``ToolCalls([(name, args), ...])`` - one or more tool calls (``finish_reason: tool_calls``),
  optionally preceded by some text;
* ``HttpError(status, message)`` - an HTTP error answer (OpenCode retries 5xx with backoff,
  ~5 s each; a 400 fails the turn at once);
* a callable ``(LLMRequest) -> step | str | None`` that inspects the request first (a ``str``
  means ``Text``; ``None`` means "answer with the script's final text").

The title-generation request OpenCode sends at the start of a session (system prompt
"You are a title generator", no tools) is answered with ``Script.title`` and does not consume a
step. When the script is exhausted every further main request gets ``Script.final_text``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ocmem.trial.scriptedmodel import MODEL_ID, completion, completion_chunks

__all__ = [
    "FakeLLM",
    "HttpError",
    "LLMRequest",
    "Script",
    "Step",
    "StepFn",
    "Text",
    "ToolCall",
    "ToolCalls",
]

TITLE_MARKER = "title generator"


# --------------------------------------------------------------------------------------------
# Steps


@dataclass(frozen=True)
class Text:
    """Answer with plain text (finish_reason ``stop``)."""

    text: str
    chunk_size: int = 16  # characters per SSE delta


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None  # generated (``call_<n>``) when None


ToolCallSpec = ToolCall | tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]


@dataclass(frozen=True)
class ToolCalls:
    """Answer with tool calls (finish_reason ``tool_calls``), optionally after some text.

    ``calls`` items are ``ToolCall`` objects or ``(name, args)`` / ``(name, args, call_id)`` tuples.
    """

    calls: Sequence[ToolCallSpec]
    text: str = ""

    @staticmethod
    def one(name: str, call_id: str | None = None, /, **arguments: Any) -> ToolCalls:
        """``ToolCalls.one("bash", command="echo 1", description="x")``."""
        return ToolCalls([ToolCall(name, dict(arguments), call_id)])

    def normalized(self) -> list[ToolCall]:
        out: list[ToolCall] = []
        for spec in self.calls:
            if isinstance(spec, ToolCall):
                out.append(spec)
            elif len(spec) == 2:
                out.append(ToolCall(spec[0], dict(spec[1])))
            else:
                out.append(ToolCall(spec[0], dict(spec[1]), spec[2]))
        return out


@dataclass(frozen=True)
class HttpError:
    """Answer with an HTTP error (OpenAI error JSON)."""

    status: int = 500
    message: str = "fake llm error"


Step = Text | ToolCalls | HttpError
StepFn = Callable[["LLMRequest"], Step | str | None]
ScriptItem = Step | StepFn | str


# --------------------------------------------------------------------------------------------
# Recorded requests


def _content_text(content: Any) -> str:
    """Flatten an OpenAI message ``content`` (string or list of parts) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


@dataclass
class LLMRequest:
    """One request received by the fake, with helpers to inspect it."""

    index: int  # 0-based over all requests
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    kind: str  # "title" | "main"
    time: float = field(default_factory=time.time)
    step_index: int | None = None  # script step consumed (None: title/exhausted)
    reply: Any = None  # the Step actually answered

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return msgs if isinstance(msgs, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools")
        return tools if isinstance(tools, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("function", {}).get("name")) for t in self.tools]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system_texts(self) -> list[str]:
        """Text of every system (or developer) message, in order."""
        return [
            _content_text(m.get("content"))
            for m in self.messages
            if m.get("role") in ("system", "developer")
        ]

    @property
    def system(self) -> str:
        """All system messages joined with blank lines."""
        return "\n\n".join(self.system_texts)

    @property
    def user_texts(self) -> list[str]:
        return [_content_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts
        return texts[-1] if texts else ""

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """``[{"tool_call_id": ..., "content": <text>}, ...]`` for every ``role: tool`` message."""
        return [
            {"tool_call_id": m.get("tool_call_id"), "content": _content_text(m.get("content"))}
            for m in self.messages
            if m.get("role") == "tool"
        ]

    @property
    def last_tool_result(self) -> str | None:
        """Content of the last message if it is a tool result, else None."""
        if self.messages and self.messages[-1].get("role") == "tool":
            return _content_text(self.messages[-1].get("content"))
        return None

    def tool_result(self, call_id: str) -> str | None:
        for r in self.tool_results:
            if r["tool_call_id"] == call_id:
                return str(r["content"])
        return None

    @property
    def assistant_tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call the model made earlier in this conversation (as sent back to us)."""
        out: list[dict[str, Any]] = []
        for m in self.messages:
            if m.get("role") == "assistant":
                out.extend(m.get("tool_calls") or [])
        return out

    def contains(self, needle: str) -> bool:
        """True if ``needle`` appears anywhere in the raw request body."""
        return needle in json.dumps(self.body, ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# Script


class Script:
    """An ordered list of steps consumed by main-agent requests."""

    def __init__(
        self,
        steps: Iterable[ScriptItem] = (),
        *,
        final_text: str = "Done.",
        title: str = "E2E test session",
    ) -> None:
        self.steps: list[ScriptItem] = list(steps)
        self.final_text = final_text
        self.title = title
        self.position = 0

    @property
    def exhausted(self) -> bool:
        return self.position >= len(self.steps)

    @property
    def remaining(self) -> int:
        return max(0, len(self.steps) - self.position)

    def next_item(self) -> tuple[int | None, ScriptItem | None]:
        if self.exhausted:
            return None, None
        index = self.position
        self.position += 1
        return index, self.steps[index]

    def extend(self, *steps: ScriptItem) -> None:
        self.steps.extend(steps)


def _resolve(item: ScriptItem | None, request: LLMRequest, final_text: str) -> Step:
    """Turn a script item into a concrete step (calling callables)."""
    value: Any = item
    for _ in range(8):  # a callable may return another callable
        if callable(value) and not isinstance(value, (Text, ToolCalls, HttpError)):
            value = value(request)
            continue
        break
    if value is None:
        return Text(final_text)
    if isinstance(value, str):
        return Text(value)
    if isinstance(value, (Text, ToolCalls, HttpError)):
        return value
    raise TypeError(f"fake LLM script step returned unsupported value {value!r}")


# --------------------------------------------------------------------------------------------
# Server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeLLM


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # -- plumbing -----------------------------------------------------------------------------
    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
            return
        self._send_json(404, {"error": {"message": f"not found: {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "invalid JSON"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.server.owner._record_other(self.path, dict(self.headers.items()), body)
            self._send_json(404, {"error": {"message": f"not found: {self.path}"}})
            return
        request, step = self.server.owner._handle(self.path, dict(self.headers.items()), body)
        if isinstance(step, HttpError):
            self._send_json(
                step.status,
                {"error": {"message": step.message, "type": "fake_error", "code": step.status}},
            )
            return
        completion_id = f"chatcmpl-fake-{request.index}"
        if request.stream:
            self._send_stream(completion_id, step, request)
        else:
            self._send_json(200, _completion_json(completion_id, step, request))

    def _send_stream(self, completion_id: str, step: Text | ToolCalls, request: LLMRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in _stream_chunks(completion_id, step, request):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _calls(step: Text | ToolCalls) -> list[tuple[str, str, dict[str, Any]]]:
    if not isinstance(step, ToolCalls):
        return []
    return [(call.id or "", call.name, call.arguments) for call in step.normalized()]


def _stream_chunks(
    completion_id: str, step: Text | ToolCalls, request: LLMRequest
) -> Iterator[dict[str, Any]]:
    size = step.chunk_size if isinstance(step, Text) else 16
    return completion_chunks(completion_id, step.text, _calls(step), request.body, size)


def _completion_json(
    completion_id: str, step: Text | ToolCalls, request: LLMRequest
) -> dict[str, Any]:
    return completion(completion_id, step.text, _calls(step), request.body)


class FakeLLM:
    """The fake server. Use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, script: Script | Sequence[ScriptItem] | None = None) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[LLMRequest] = []
        self.other_requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.script = Script()
        if script is not None:
            self.set_script(script)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``baseURL`` for the provider config (ends with ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ----------------------------------------------------------------------------
    def set_script(self, *steps: Script | Sequence[ScriptItem] | ScriptItem, **kw: Any) -> Script:
        """Replace the script: ``set_script(Script([...]))``, ``set_script([...])`` or
        ``set_script(step1, step2, ..., final_text="bye")``."""
        with self._lock:
            if len(steps) == 1 and isinstance(steps[0], Script) and not kw:
                self.script = steps[0]
            elif len(steps) == 1 and isinstance(steps[0], (list, tuple)):
                self.script = Script(steps[0], **kw)
            else:
                self.script = Script(steps, **kw)  # type: ignore[arg-type]
            return self.script

    def add_steps(self, *steps: ScriptItem) -> None:
        with self._lock:
            self.script.extend(*steps)

    # -- inspection ---------------------------------------------------------------------------
    @property
    def main_requests(self) -> list[LLMRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == "main"]

    @property
    def title_requests(self) -> list[LLMRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == "title"]

    def wait_for_requests(self, count: int, timeout: float = 30.0, kind: str = "main") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                n = sum(1 for r in self.requests if r.kind == kind)
            if n >= count:
                return
            time.sleep(0.05)
        raise TimeoutError(f"fake LLM got fewer than {count} {kind} requests in {timeout}s")

    def summary(self) -> str:
        """Human-readable list of the requests and replies (for failure messages)."""
        lines: list[str] = []
        with self._lock:
            for r in self.requests:
                reply = r.reply
                if isinstance(reply, ToolCalls):
                    desc = "tool_calls " + ", ".join(
                        f"{c.name}({json.dumps(c.arguments)[:80]})" for c in reply.normalized()
                    )
                elif isinstance(reply, Text):
                    desc = f"text {reply.text[:80]!r}"
                else:
                    desc = repr(reply)
                lines.append(
                    f"#{r.index} {r.kind:5} step={r.step_index} msgs={len(r.messages)} "
                    f"tools={len(r.tools)} last_user={r.last_user_text[:60]!r} -> {desc}"
                )
            lines.extend(f"ERROR {e}" for e in self.errors)
        return "\n".join(lines) or "(no requests)"

    # -- request handling (called from server threads) ------------------------------------------
    @staticmethod
    def classify(body: dict[str, Any]) -> str:
        system = " ".join(
            _content_text(m.get("content"))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") in ("system", "developer")
        )
        if TITLE_MARKER in system.lower() and not body.get("tools"):
            return "title"
        return "main"

    def _record_other(self, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.other_requests.append({"path": path, "headers": headers, "body": body})

    def _handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[LLMRequest, Step]:
        with self._lock:
            request = LLMRequest(
                index=len(self.requests),
                path=path,
                headers=headers,
                body=body,
                kind=self.classify(body),
            )
            self.requests.append(request)
            script = self.script
            if request.kind == "title":
                item: ScriptItem | None = Text(script.title)
            else:
                request.step_index, item = script.next_item()
        # resolve outside the lock: a callable step may inspect llm state
        try:
            step = _resolve(item, request, script.final_text)
        except Exception as exc:  # surface script bugs to the test instead of hanging
            msg = f"script step {request.step_index} raised {exc!r}"
            with self._lock:
                self.errors.append(msg)
            step = HttpError(400, msg)  # 400: not retried by the AI SDK
        if isinstance(step, ToolCalls):
            step = ToolCalls(
                [
                    ToolCall(c.name, c.arguments, c.id or f"call_{next(self._ids)}")
                    for c in step.normalized()
                ],
                step.text,
            )
        request.reply = step
        return request, step
