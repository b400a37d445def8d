"""The README's examples, run as written against a live server, so the README cannot rot.

Like a reader after `make run`: seed_demo, daphne, then every ```sh block in one bash (in
order, like one terminal), every ```python block before "The JSON API" in one
`manage.py shell` (the tour says to open it) and the later ones in one plain Python started
from that terminal. A block right after `<!-- not run: reason -->` is skipped, and so is
the opening `make run` / `make test` block. The README's http://127.0.0.1:8000 becomes the
live server's address; the model the Agents SDK and the OpenAI-style example call is a
scripted fake on loopback (`OPENAI_BASE_URL`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.live_server import ROOT, running_daphne, server_env
from tests.llm.fakes import FakeServer, Reply, openai_completion, openai_tool_call

README = ROOT / "README.md"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
README_URL = "http://127.0.0.1:8000"
PLAIN_PYTHON_FROM = "The JSON API"  # python blocks from this section on run outside Django
FENCE = re.compile(r"(?P<skip><!-- not run: [^>]+-->\n)?^```(?P<lang>\w*)\n(?P<code>.*?)^```$",
                   re.S | re.M)
HEADING = re.compile(r"^## (.+)$", re.M)
# Runs each block in turn in one namespace, so later blocks see earlier names.
DRIVER = """
import json, os
for i, src in enumerate(json.load(open(os.environ["README_BLOCKS"]))):
    print(f"--- block {i}", flush=True)
    exec(compile(src, f"README python block {i}", "exec"), globals())
"""


@dataclass
class Block:
    section: str
    lang: str
    code: str
    skipped: bool


def readme_blocks(text: str) -> list[Block]:
    headings = [(m.start(), m.group(1)) for m in HEADING.finditer(text)]
    blocks = []
    for m in FENCE.finditer(text):
        section = next((h for pos, h in reversed(headings) if pos < m.start()), "")
        code = m.group("code")
        only_make = all(line.startswith("make ") for line in code.splitlines() if line.strip())
        blocks.append(Block(section, m.group("lang"), code, bool(m.group("skip")) or only_make))
    return blocks


def runnable(lang: str, *, plain: bool | None = None) -> list[str]:
    text = README.read_text().replace(README_URL, "{BASE}")
    blocks = [b for b in readme_blocks(text) if b.lang == lang and not b.skipped]
    if plain is not None:
        sections = HEADING.findall(text)
        first_plain = sections.index(PLAIN_PYTHON_FROM)
        blocks = [b for b in blocks if (sections.index(b.section) >= first_plain) == plain]
    return [b.code for b in blocks]


def run(args: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"README {what} failed:\n{output}"
    return done.stdout


def run_python(blocks: list[str], base: str, env: dict[str, str], tmp_path: Path,
               args: list[str], what: str) -> str:
    path = tmp_path / f"{what}.json"
    path.write_text(json.dumps([b.replace("{BASE}", base) for b in blocks]))
    return run([PYTHON, *args, DRIVER], {**env, "README_BLOCKS": str(path)}, what)


def reader_env(fake_llm: str) -> dict[str, str]:
    """The test database, the fake model, and a PATH without the venv (nor a real LLM)."""
    env = server_env({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"{fake_llm}/v1",
                      "OPENAI_AGENTS_DISABLE_TRACING": "1"})
    venv_bin = str(ROOT / ".venv" / "bin")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return {k: v for k, v in env.items() if not k.startswith(("ARBOR_LLM", "ARBOR_ANTHROPIC"))}


def need_jq() -> None:
    if shutil.which("jq") is None:
        if os.environ.get("CI"):
            pytest.fail("the README's curl walk-through needs jq: apt-get install -y jq")
        pytest.skip("jq is not installed (the README's curl walk-through needs it)")


def test_readme_parser_sees_every_example():
    text = README.read_text()
    blocks = readme_blocks(text)
    # The README opens with the two commands, each with its one-line description.
    assert [line.split("#")[0].strip() for line in blocks[0].code.splitlines()] == [
        "make run", "make test"]
    assert text.index(blocks[0].code) < text.index("\n\n", len("# Arbor\n\n"))
    assert blocks[0].skipped  # the make run / make test block
    assert len(runnable("python", plain=False)) >= 4
    assert len(runnable("python", plain=True)) >= 3
    assert len(runnable("sh")) >= 1
    assert [b.lang for b in blocks if b.skipped] == ["sh", "sh"]  # only the two make blocks


@pytest.mark.parametrize("ci", ["", "true"])
def test_without_jq_ci_fails_and_a_laptop_skips(monkeypatch, ci):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="jq"):
        need_jq()


@pytest.mark.usefixtures("transactional_db")
def test_readme_examples_run_as_written(tmp_path, monkeypatch):
    need_jq()
    for name in list(os.environ):
        if name.startswith(("ARBOR_LLM", "ARBOR_ANTHROPIC")):
            monkeypatch.delenv(name)  # the server must run the offline demo model
    set_memory = json.dumps({"label": "memory", "content": "- Vegetarian."})
    replies = [
        # The OpenAI-style example: the model calls set_context.
        Reply(200, openai_completion(None, tool_calls=[
            openai_tool_call("call_1", "set_context", set_memory)], finish_reason="tool_calls")),
        # The Agents SDK example: two turns.
        Reply(200, openai_completion("Nice to meet you, Ada.")),
        Reply(200, openai_completion("Your name is Ada.")),
    ]
    with FakeServer() as fake_llm:
        fake_llm.script(*replies)
        env = reader_env(fake_llm.url)
        run([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")  # as make run does
        seeded = run([PYTHON, "manage.py", "seed_demo"], env, "seed_demo")
        assert "API key for the demo agent" in seeded and "password" in seeded
        with running_daphne(tmp_path) as base:
            shell = run_python(runnable("python", plain=False), base, env, tmp_path,
                               ["manage.py", "shell", "-c"], "shell")
            env = run_shell(runnable("sh"), base, env, tmp_path)
            plain = run_python(runnable("python", plain=True), base, env, tmp_path,
                               ["-c"], "python")
        agents_saw = [m.get("content") for m in fake_llm.requests[-1].body["messages"]]
    check_engine_examples(shell)
    check_python_examples(plain)
    assert "My name is Ada" in json.dumps(agents_saw)  # the second turn carried the first


def run_shell(blocks: list[str], base: str, env: dict[str, str], tmp_path: Path
              ) -> dict[str, str]:
    """Run the sh blocks in one bash; the environment it ends with (what the reader has)."""
    env_file = tmp_path / "env"
    script = "\n".join(b.replace("{BASE}", base) for b in blocks)
    out = run(["bash", "-euo", "pipefail", "-c", f'{script}\nenv -0 > "{env_file}"'], env, "sh")
    check_curl_walkthrough(out)
    pairs = (item.split("=", 1) for item in env_file.read_text().split("\0") if "=" in item)
    return dict(pairs)


def check_engine_examples(out: str) -> None:
    branches = re.findall(r"^\['[^']+', '[^']+'\]$", out, re.M)
    assert branches, out  # get_branches printed two ids
    assert "evening plan" in out
    hits = re.findall(r"^\d+ [0-9a-f-]{36} \d{4}-\S+ \S+ (.*)$", out, re.M)
    assert len(hits) == 3 and all("Lisbon" in hit for hit in hits), out  # search, limit=3
    assert "ContextBlock(label='memory'" in out and "Prefers window seats" in out
    assert "Updated memory:" in out, out  # the tool the fake model called ran


def check_curl_walkthrough(out: str) -> None:
    assert "Booked the 18:40 flight." in out
    assert "Lisbon" in out
    assert '"Prefers window seats"' in out
    assert "MEMORY (Learned facts)" in out  # the frozen prompt
    events = re.findall(r"^event: (\w+)", out, re.M)
    assert events and events[-1] == "done", out  # the chat stream ends with the stored answer
    assert "vegetarian" in out.rsplit("event: done", 1)[-1]  # remembered, from memory


def check_python_examples(out: str) -> None:
    assert "['Deploy on Tuesday?', 'No, Thursday.']" in out
    assert "Deploy on Tuesday?" in out.split("['Deploy", 1)[1].split("\n", 1)[1]  # a search hit
    assert "tool_call set_context" in out and "tool_result set_context" in out
    assert re.search(r"^stored \S+ '", out, re.M), out
    assert "I like tea" in out.split("tool_result set_context", 1)[1]
    assert "Your name is Ada." in out
    assert re.search(r"^message\.appended \d+$", out, re.M), out  # the live event arrived
    # The Agents SDK session section: memory, a branch, usage, turns found by search.
    assert "You said: My name is Ada | I live in Lisbon | Where do I live?" in out
    assert "You said: My name is Ada | I live in Porto\n['main', 'porto']" in out, out


def test_the_event_table_lists_every_type_with_its_payload_keys():
    """The "Watching a session live" table against memory_core/events.py's payloads."""
    from memory_core.events import EVENT_TYPES, PAYLOADS

    text = README.read_text()
    start = text.index("| Event | `data` | When |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        event, data = (cell.strip() for cell in line.strip("|").split("|")[:2])
        rows[event.strip("`")] = set(re.findall(r"`(\w+)`", data))
    assert list(rows) == list(EVENT_TYPES)
    for event, keys in rows.items():
        declared = PAYLOADS[event]
        assert keys == set(declared.__required_keys__ | declared.__optional_keys__), event
