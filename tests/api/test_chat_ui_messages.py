"""What Arbor writes itself is valid AI SDK `UIMessage`s: checked by the `ai` npm package's
own `validateUIMessages` (installed with npm into the git-ignored test-output/ on first
use; Node and npm are on every machine, so CI fails rather than skips without them).

The histories: Arbor's chat turn with a tool that works, one that fails and one the model
made up (the offline demo model and a scripted one), and what `ArborSession` stores for
the OpenAI Agents SDK's items."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from arbor_client.agents_session import item_to_message
from memory_core import SessionManager
from memory_core.llm import LLMResponse, ToolCall, Usage
from memory_core.llm.demo import DemoModel
from tests.live_server import ROOT

NODE_DIR = ROOT / "test-output" / "ai-sdk"
PACKAGES = ["ai@6", "zod@4"]
VALIDATE = """
const { validateUIMessages } = require("ai");
const histories = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
(async () => {
  const problems = [];
  for (const messages of histories) {
    try { await validateUIMessages({ messages }); problems.push(null); }
    catch (error) { problems.push(String(error && error.message || error)); }
  }
  console.log(JSON.stringify(problems));
})();
"""


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must validate Arbor's messages with the ai package")
    pytest.skip(what)


@pytest.fixture(scope="session")
def validate_ui_messages():
    """A function: histories (lists of message dicts) -> one problem (or None) each."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _missing("node and npm are not installed")
    if not (NODE_DIR / "node_modules" / "ai" / "package.json").exists():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(NODE_DIR),
             *PACKAGES], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            _missing(f"npm install {' '.join(PACKAGES)} failed: {done.stderr[-800:]}")
    script = NODE_DIR / "validate.cjs"
    script.write_text(VALIDATE)

    def validate(histories: list[list[dict]], tmp: Path) -> list[str | None]:
        data = tmp / "histories.json"
        data.write_text(json.dumps(histories))
        done = subprocess.run(["node", str(script), str(data)], capture_output=True, text=True,
                              timeout=120, cwd=NODE_DIR)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return validate


def ui(messages) -> list[dict]:
    return [{"id": m.id, "role": m.role, "parts": m.parts, "metadata": m.metadata}
            for m in messages]


class Scripted:
    """Calls a tool that fails, then one that does not exist, then answers."""

    model = "scripted"

    def __init__(self) -> None:
        self.steps = [
            [ToolCall("c1", "set_context", {"label": "nope", "content": "x"})],
            [ToolCall("c2", "no_such_tool", {"q": 1})],
            [],
        ]

    def complete(self, *, system, history, tools, **options):
        calls = self.steps.pop(0)
        return LLMResponse("" if calls else "Done.", calls, Usage(5, 2, 0.0), self.model)

    def stream(self, **kwargs):  # pragma: no cover - these turns do not stream
        raise NotImplementedError


def test_arbor_written_histories_are_valid_ui_messages(agent, validate_ui_messages, tmp_path):
    demo = SessionManager.for_agent(agent).with_llm(DemoModel())
    chat = demo.get_session(demo.create("demo").id)
    chat.chat("Remember that my cat is called Miso")
    chat.chat("What do you remember?")
    scripted = SessionManager.for_agent(agent).with_llm(Scripted())
    failing = scripted.get_session(scripted.create("errors").id)
    failing.chat("try the tools")
    items = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "add 2 and 3"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "sum"}]},
        {"type": "function_call", "call_id": "k1", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"type": "function_call_output", "call_id": "k1", "output": "5"},
        {"type": "function_call_output", "call_id": "unknown", "output": [
            {"type": "input_text", "text": "orphan"}]},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "5", "annotations": []}]},
        {"role": "user", "content": "odd values: \ud800", "n": 2**70, "x": float("nan")},
    ]
    names, inputs = {"k1": "add"}, {"k1": {"a": 2, "b": 3}}
    sdk = SessionManager.for_agent(agent)
    sid = sdk.create("sdk").id
    stored = sdk.append_all(sid, [item_to_message(i, names, inputs) for i in items])
    histories = [ui(chat.get_history()), ui(failing.get_history()), ui(stored)]
    kinds = {p["type"] for h in histories for m in h for p in m["parts"]}
    assert {"tool-set_context", "tool-no_such_tool", "tool-add", "dynamic-tool",
            "reasoning", "text"} <= kinds
    states = {p.get("state") for h in histories for m in h for p in m["parts"]}
    assert {"input-available", "output-available", "output-error"} <= states
    assert {m["role"] for h in histories for m in h} <= {"user", "assistant", "system"}
    assert validate_ui_messages(histories, tmp_path) == [None, None, None]


def test_the_validator_refuses_the_old_split_form(validate_ui_messages, tmp_path):
    old = [{"id": "t1", "role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "c1", "output": "ok"}]}]
    assert validate_ui_messages([old], tmp_path)[0] is not None  # what Arbor wrote before
