"""memory_core.imports without a database: format detection, the readings where formats
are loose, and trees of any depth (issue 30)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from memory_core.imports import BadExport, conversations, detect, plan, read
from memory_core.imports.tree import Conversation, Node, to_time
from tests.imports import exports as ex


def planned(body: bytes, fmt: str = "auto") -> list:
    found, value = read(body, fmt)
    return [plan(c) for c in conversations(found, value)]


def order(p) -> list[str]:
    return [m["metadata"]["source"]["message_id"] for m in p.messages]


@pytest.mark.parametrize(("value", "fmt"), [
    (ex.chatgpt(), "chatgpt"), (ex.claude(), "claude"), (ex.openwebui(), "openwebui"),
    (ex.openwebui()[0], "openwebui"), (ex.librechat_flat(), "librechat"),
    (ex.librechat_tree(), "librechat"), (ex.pi_entries()[0], "pi"),
    ({"format": "arbor.session"}, "arbor"), ({}, "arbor"),
])
def test_detect_by_the_fields_only_that_format_has(value, fmt):
    assert detect(value) == fmt


@pytest.mark.parametrize("value", [[], [1], "text", [{"other": 1}]])
def test_detect_refuses_what_it_cannot_tell(value):
    with pytest.raises(BadExport, match="could not tell the file's format"):
        detect(value)


def test_a_chatgpt_chain_of_20000_messages_plans_without_recursion():
    mapping = {"n0": {"id": "n0", "parent": None, "children": [], "message": None}}
    for i in range(1, 20_001):
        mapping[f"n{i}"] = {"id": f"n{i}", "parent": f"n{i - 1}", "children": [], "message": {
            "author": {"role": "user" if i % 2 else "assistant"}, "create_time": i,
            "content": {"content_type": "text", "parts": [f"m{i}"]}}}
    [p] = planned(orjson.dumps([{"id": "deep", "mapping": mapping, "current_node": "n20000"}]))
    assert len(p.messages) == 20_000 and p.messages[-1]["id"] == "n20000"
    assert p.messages[1]["parent_id"] == "n1"  # the null root dropped: n1 is the root


def test_nested_json_far_past_every_parser_limit_reads():
    [p] = planned(ex.deep_json(8000))  # 16,000 levels
    assert len(p.messages) == 8000 and p.messages[-1]["id"] == "d7999"


def test_a_hidden_current_node_means_its_nearest_kept_ancestor():
    data = ex.chatgpt()[1]
    data["mapping"]["ans"]["message"]["metadata"] = {"is_visually_hidden_from_conversation": True}
    data["current_node"] = "ans"
    [p] = planned(orjson.dumps([data]))
    assert order(p) == ["q"]


def test_a_current_node_with_children_opens_on_the_newest_leaf_under_it():
    data = ex.chatgpt()[0]
    data["current_node"] = "u1"
    [p] = planned(orjson.dumps([data]))
    assert order(p)[-1] == "a4"  # u1 -> a2 (newer than a1) -> ... -> a4


def test_pi_current_is_the_nearest_message_above_the_last_entry():
    entries = ex.pi_entries()
    # The person went back to the first branch's answer (e4) and labelled it: the file's
    # last entry hangs off e4, so e4 is current though b2 is newer.
    entries.append(ex._pi("label", "l2", "e4", 12, targetId="e4", label="here"))
    [p] = planned(ex.pi_jsonl(entries))
    assert order(p)[-1] == "e4"
    # The last entry under a message with children: the newest leaf under it.
    entries[-1] = ex._pi("label", "l2", "e2", 12, targetId="e2", label="here")
    [p] = planned(ex.pi_jsonl(entries))
    assert order(p)[-1] == "b2"


def test_pi_version_1_without_ids_is_a_chain():
    lines = [{"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00Z"},
             {"type": "message", "timestamp": "2024-01-01T00:00:01Z",
              "message": {"role": "user", "content": "hi"}},
             {"type": "message", "timestamp": "2024-01-01T00:00:02Z",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}}]
    [p] = planned(b"\n".join(orjson.dumps(x) for x in lines))
    assert [m["parent_id"] for m in p.messages] == [None, "entry-2"]
    assert p.name == "hi"


def test_times_read_as_utc_whatever_their_form():
    want = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    for value in (ex.T0, ex.T0 * 1000, float(ex.T0), "2023-11-14T22:13:20Z",
                  "2023-11-14T23:13:20+01:00", "2023-11-14T22:13:20"):
        assert to_time(value, conversation="c", where="t") == want
    for bad in ("soon", True, [1], 1e30):
        with pytest.raises(BadExport, match="t must be a timestamp"):
            to_time(bad, conversation="c", where="t")


def test_skipped_nodes_keep_their_children_and_order():
    conv = Conversation(format="x", id="c", title="", nodes=[
        Node("a", None, "user"), Node("skip", "a", None), Node("b", "skip", "assistant"),
        Node("c", "skip", "assistant")], current="b")
    p = plan(conv)
    assert [(m["id"], m["parent_id"]) for m in p.messages] == [
        ("a", None), ("c", "a"), ("b", "a")]  # the current leaf b stored last
    assert p.name == "x conversation"
