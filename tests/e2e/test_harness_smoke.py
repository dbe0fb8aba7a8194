"""Smoke tests proving the e2e harness: fake LLM, netguard, `opencode run`, `opencode serve`,
local TS plugins, skills. The first group needs no OpenCode and runs in well under a second."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import httpx
import pytest

from e2e.fake_llm import FakeLLM, LLMRequest, Script, Text, ToolCalls
from e2e.harness import OpenCode, assistant_text
from e2e.netguard import NetGuard

# --------------------------------------------------------------------------------------------
# Fake LLM and netguard on their own (no OpenCode needed)

MAIN_BODY: dict[str, Any] = {
    "model": "fake-model",
    "messages": [
        {"role": "system", "content": "You are opencode"},
        {"role": "user", "content": "hi"},
    ],
    "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
}
TITLE_BODY: dict[str, Any] = {
    "model": "fake-model",
    "messages": [
        {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
        {"role": "user", "content": "hi"},
    ],
}


def _sse(client: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    with client.stream(
        "POST",
        "/chat/completions",
        json={**body, "stream": True, "stream_options": {"include_usage": True}},
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    for line in lines[:-1]:
        chunks.append(json.loads(line[len("data: ") :]))
    return chunks


def test_fake_llm_streams_tool_calls_text_and_records(fake_llm: FakeLLM) -> None:
    fake_llm.set_script(
        ToolCalls(
            [
                ("bash", {"command": "echo 1", "description": "x"}, "call_a"),
                ("read", {"filePath": "/x"}),
            ],
            text="let me look",
        ),
        lambda req: Text(f"saw {len(req.tool_results)} results"),
        final_text="bye",
    )
    with httpx.Client(base_url=fake_llm.base_url, trust_env=False) as client:
        title = client.post("/chat/completions", json=TITLE_BODY).json()
        assert title["choices"][0]["message"]["content"] == "E2E test session"

        chunks = _sse(client, MAIN_BODY)
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        assert "".join(d.get("content") or "" for d in deltas) == "let me look"
        calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
        assert calls[0]["id"] == "call_a" and calls[0]["function"]["name"] == "bash"
        assert {tc["index"] for tc in calls} == {0, 1}
        args = "".join(tc["function"]["arguments"] for tc in calls if tc["index"] == 0)
        assert json.loads(args) == {"command": "echo 1", "description": "x"}
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        assert finishes[-1] == "tool_calls"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0

        with_result = {
            **MAIN_BODY,
            "messages": [
                *MAIN_BODY["messages"],
                {"role": "tool", "tool_call_id": "call_a", "content": "1\n"},
            ],
        }
        chunks = _sse(client, with_result)
        text = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
        )
        assert text == "saw 1 results"
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"

        exhausted = client.post("/chat/completions", json=MAIN_BODY).json()
        assert exhausted["choices"][0]["message"]["content"] == "bye"

    assert [r.kind for r in fake_llm.requests] == ["title", "main", "main", "main"]
    assert fake_llm.main_requests[1].tool_result("call_a") == "1\n"
    assert fake_llm.main_requests[0].system == "You are opencode"
    assert fake_llm.main_requests[0].tool_names == ["bash"]


def test_fake_llm_script_error_is_reported(fake_llm: FakeLLM) -> None:
    def broken(req: LLMRequest) -> Text:
        raise ValueError("boom")

    fake_llm.set_script(Script([broken]))
    with httpx.Client(base_url=fake_llm.base_url, trust_env=False) as client:
        assert client.post("/chat/completions", json=MAIN_BODY).status_code == 400
    assert "boom" in fake_llm.errors[0]


def test_netguard_records_and_refuses(netguard: NetGuard) -> None:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": netguard.url, "https": netguard.url})
    )
    for url in ("http://example.com/x", "https://registry.npmjs.org/"):
        with pytest.raises((urllib.error.HTTPError, urllib.error.URLError)):
            opener.open(url, timeout=5)
    assert netguard.hosts == ["example.com", "registry.npmjs.org:443"]
    with pytest.raises(AssertionError, match=r"registry\.npmjs\.org"):
        netguard.assert_no_attempts()
    netguard.clear()
    netguard.assert_no_attempts()


# --------------------------------------------------------------------------------------------
# The real OpenCode binary

PROBE_PLUGIN = r"""
import { tool, type Plugin } from "@opencode-ai/plugin"
import { writeFile } from "node:fs/promises"

interface ProbeState { before: number; tools: string[]; idles: number; disposed: boolean }

export const ProbePlugin: Plugin = async ({ directory }) => {
  const out: string = process.env.PROBE_OUT ?? `${directory}/probe.json`
  const state: ProbeState = { before: 0, tools: [], idles: 0, disposed: false }
  const flush = async (): Promise<void> => {
    await writeFile(out, JSON.stringify(state))
  }
  return {
    tool: {
      probe_echo: tool({
        description: "Echo the text back (e2e probe)",
        args: { text: tool.schema.string().describe("text to echo") },
        async execute(args) {
          return `probe says: ${args.text}`
        },
      }),
    },
    "tool.execute.before": async (input) => {
      state.before += 1
      state.tools.push(input.tool)
    },
    event: async ({ event }) => {
      if (event.type === "session.idle") {
        state.idles += 1
        await flush()
      }
    },
    dispose: async () => {
      await new Promise((resolve) => setTimeout(resolve, 300)) // proves dispose is awaited
      state.disposed = true
      await flush()
    },
  }
}
"""


@pytest.mark.e2e
def test_run_two_step_script(oc: OpenCode) -> None:
    project = oc.project()
    oc.llm.set_script(
        ToolCalls.one("bash", command="echo hello-from-tool", description="Say hello"),
        Text("all done: tool said hello"),
    )
    result = oc.run(project, "please say hello")
    assert result.returncode == 0, oc.debug_report(result)
    assert "all done: tool said hello" in result.stdout
    assert result.final_text == "all done: tool said hello"
    assert [u["tool"] for u in result.tool_uses] == ["bash"]

    main = oc.llm.main_requests
    assert len(main) >= 2, oc.debug_report(result)
    assert len(oc.llm.title_requests) == 1  # answered without consuming the script
    assert main[0].last_user_text == "please say hello"
    assert "bash" in main[0].tool_names and main[0].system  # system prompt recorded
    assert main[1].last_tool_result is not None
    assert "hello-from-tool" in main[1].last_tool_result
    assert oc.log_files(), "OpenCode log not captured"
    oc.netguard.assert_no_attempts()  # (d) also checked by the fixture at teardown


@pytest.mark.e2e
def test_local_ts_plugin_loads_without_build(oc: OpenCode) -> None:
    project = oc.project()
    out = oc.out_path("probe.json")
    oc.extra_env["PROBE_OUT"] = str(out)
    oc.add_plugin("probe.ts", PROBE_PLUGIN)
    oc.llm.set_script(
        ToolCalls.one("probe_echo", text="ping"),
        ToolCalls(
            [
                ("bash", {"command": "echo one", "description": "a"}),
                ("bash", {"command": "echo two", "description": "b"}),
            ]
        ),
        Text("finished"),
    )
    result = oc.run(project, "use the probe")
    assert result.returncode == 0, oc.debug_report(result)
    assert result.final_text == "finished"
    main = oc.llm.main_requests
    assert "probe_echo" in main[0].tool_names, "plugin tool not registered"
    assert main[1].last_tool_result == "probe says: ping"
    state = json.loads(out.read_text())
    assert state == {
        "before": 3,
        "tools": ["probe_echo", "bash", "bash"],
        "idles": 1,
        "disposed": True,
    }, oc.debug_report(result)
    assert "failed to load plugin" not in oc.log_text()


MARK_PLUGIN = r"""
import type { Plugin } from "@opencode-ai/plugin"

export const MarkPlugin: Plugin = async ({ directory }) => {
  await Bun.write(process.env.MARK_OUT!, directory)
  return {}
}
"""


@pytest.mark.e2e
def test_skill_tool_call(oc: OpenCode) -> None:
    project = oc.project()
    oc.add_skill(
        "demo",
        "A demo skill for the e2e harness",
        "# Demo\n\nSKILL-BODY-MARKER-42",
        extra_files={"notes.txt": "x"},
    )
    # also a project-level plugin: <project>/.opencode gets seeded too (no npm install)
    mark = oc.out_path("mark.txt")
    oc.extra_env["MARK_OUT"] = str(mark)
    oc.add_plugin("mark.ts", MARK_PLUGIN, project=project)
    oc.llm.set_script(ToolCalls.one("skill", name="demo"), Text("skill loaded"))
    result = oc.run(project, "load the demo skill")
    assert result.returncode == 0, oc.debug_report(result)
    first, second = oc.llm.main_requests[:2]
    assert "<name>demo</name>" in first.system
    assert "skill" in first.tool_names
    skill_output = second.last_tool_result or ""
    assert '<skill_content name="demo">' in skill_output, oc.debug_report(result)
    assert "SKILL-BODY-MARKER-42" in skill_output
    assert "notes.txt" in skill_output  # sibling-file listing uses ripgrep
    assert result.final_text == "skill loaded"
    assert mark.read_text() == str(project)


@pytest.mark.e2e
def test_serve_two_turns_one_session(oc: OpenCode) -> None:
    project = oc.project()
    out = oc.out_path("probe.json")
    oc.extra_env["PROBE_OUT"] = str(out)
    oc.add_plugin("probe.ts", PROBE_PLUGIN)
    oc.llm.set_script(
        ToolCalls.one("bash", command="echo turn-one", description="t1"),
        Text("turn one done"),
        lambda req: Text(f"turn two saw: {req.last_user_text}"),
    )
    with oc.serve(project) as server:
        sid = server.create_session()
        reply1 = server.prompt(sid, "first turn")
        assert assistant_text(reply1) == "turn one done"
        reply2 = server.prompt(sid, "second turn")
        assert assistant_text(reply2) == "turn two saw: second turn"
        roles = [m["info"]["role"] for m in server.messages(sid)]
        assert roles.count("user") == 2 and roles[-1] == "assistant"
        # a third turn the asynchronous way, waiting for session.idle on the event stream
        mark = server.prompt_async(sid, "third turn")
        server.wait_idle(sid, since=mark)
        assert len(server.events.of_type("session.idle", sid)) == 3
        server.dispose()  # returns once the plugin's (slow) dispose hook has finished
        state = json.loads(out.read_text())
        assert state == {"before": 1, "tools": ["bash"], "idles": 3, "disposed": True}

    main = oc.llm.main_requests
    assert len(main) == 4
    assert main[2].user_texts == ["first turn", "second turn"]  # same session history
    assert main[3].last_user_text == "third turn"
    assert {r.headers.get("x-session-id") for r in main} == {sid}


@pytest.mark.e2e
def test_netguard_sees_opencode_outbound(oc: OpenCode) -> None:
    """Negative control: a webfetch from inside OpenCode reaches the proxy and is refused."""
    oc.allow_outbound = True
    project = oc.project()
    oc.llm.set_script(
        ToolCalls.one("webfetch", url="https://example.com/", format="text"),
        lambda req: Text("fetch result: " + (req.last_tool_result or "")[:200]),
    )
    result = oc.run(project, "fetch example.com")
    assert result.returncode == 0, oc.debug_report(result)
    assert "example.com:443" in oc.netguard.hosts, oc.debug_report(result)
