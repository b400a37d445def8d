"""manage.py import_chats (issue 30): the endpoint's import for files past the body
limit, streamed one conversation at a time, with a progress bar on a terminal."""

from __future__ import annotations

import io
import json

import orjson
import pytest
from django.core.management import CommandError, call_command

from memory_core.imports import reading
from sessions_app import models
from tests.imports import exports as ex


def run(*args: str, tty: bool = False) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    err.isatty = lambda: tty  # type: ignore[method-assign]
    import sys
    real = sys.stderr
    sys.stderr = err
    try:
        call_command("import_chats", *args, stdout=out)
    finally:
        sys.stderr = real
    return json.loads(out.getvalue()), err.getvalue()


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, data in (("chatgpt.json", orjson.dumps(ex.chatgpt())),
                       ("claude.json", orjson.dumps(ex.claude(), option=orjson.OPT_INDENT_2)),
                       ("openwebui.json", orjson.dumps(ex.openwebui())),
                       ("librechat.json", orjson.dumps(ex.librechat_tree())),
                       ("pi.jsonl", ex.pi_jsonl())):
        paths[name.split(".")[0]] = tmp_path / name
        paths[name.split(".")[0]].write_bytes(data)
    return paths


@pytest.mark.parametrize("name", ["chatgpt", "claude", "openwebui", "librechat", "pi"])
def test_each_format_imports_and_a_second_run_adds_nothing(agent, files, name):
    summary, _ = run("--agent", agent.id, str(files[name]))
    assert summary["format"] == name and summary["sessions"] and not summary["skipped"]
    before = (models.Session.objects.count(), models.Message.objects.count())
    again, _ = run("--agent", agent.id, str(files[name]))
    assert again["sessions"] == [] and len(again["skipped"]) == len(summary["sessions"])
    assert before == (models.Session.objects.count(), models.Message.objects.count())


def test_a_top_level_list_is_read_one_conversation_at_a_time(agent, files, monkeypatch):
    seen = []
    real = reading._BY_ITEM["chatgpt"]

    def spy(item, i):
        seen.append((i, f.tell()))
        return real(item, i)

    monkeypatch.setitem(reading._BY_ITEM, "chatgpt", spy)
    with open(files["chatgpt"], "rb") as f:
        found, conversations = reading.stream(f)
        assert found == "chatgpt" and seen == []  # nothing read past the first item yet
        list(conversations)
    assert [i for i, _ in seen] == [0, 1]


def test_a_progress_bar_on_a_terminal_only(agent, files):
    _, err = run("--agent", agent.id, str(files["chatgpt"]), tty=True)
    assert "\r[" in err and "100%" in err and "2 conversations, 11 messages" in err
    _, quiet = run("--agent", agent.id, str(files["claude"]), tty=False)
    assert quiet == ""


def test_a_malformed_file_imports_nothing_and_says_where(agent, tmp_path):
    data = ex.chatgpt()
    data[1]["mapping"]["ans"]["parent"] = "ghost"
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(CommandError, match=r'nothing imported: conversation conv-hello: '
                                           r'mapping\["ans"\]\.parent'):
        run("--agent", agent.id, str(path))
    assert models.Session.objects.count() == 0


def test_unknown_agent_and_missing_file_are_errors(agent, files, tmp_path):
    with pytest.raises(CommandError, match="agent nope not found"):
        run("--agent", "nope", str(files["pi"]))
    with pytest.raises(CommandError, match="cannot read"):
        run("--agent", agent.id, str(tmp_path / "missing.json"))


def test_forced_format_and_arbor_documents(agent, files, manager):
    summary, _ = run("--agent", agent.id, "--format", "pi", str(files["pi"]))
    assert summary["sessions"][0]["name"] == "List project files"
    with pytest.raises(CommandError, match="nothing imported"):
        run("--agent", agent.id, "--format", "claude", str(files["chatgpt"]))
    sid = summary["sessions"][0]["id"]
    from memory_core.transfer import export_session
    doc = tmp = files["pi"].with_name("doc.json")
    tmp.write_bytes(orjson.dumps(export_session(manager, sid), default=str))
    arbor, _ = run("--agent", agent.id, str(doc))
    assert arbor["format"] == "arbor" and arbor["sessions"][0]["messages"] == 6
