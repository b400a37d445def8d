"""A tool call and its output as ArborSession stores them (the Agents SDK's function_call
and function_call_output items, one message each) on the chat page: the input shows once,
on the call, and the output once, on the result."""

from __future__ import annotations

import pytest

from arbor_client.agents_items import item_to_message

pytestmark = pytest.mark.django_db

CALL = {"type": "function_call", "call_id": "k1", "name": "lookup_host",
        "arguments": '{"host": "db-west-7"}'}
OUTPUT = {"type": "function_call_output", "call_id": "k1", "output": "healthy: 12 ms"}


def sdk_session(manager, *extra):
    """A session holding what ArborSession.add_items appends for these items."""
    items = [{"role": "user", "content": "is the db up?"}, CALL, OUTPUT, *extra]
    names, inputs = {"k1": "lookup_host"}, {"k1": {"host": "db-west-7"}}
    sid = manager.create("sdk").id
    stored = manager.append_all(sid, [item_to_message(i, names, inputs) for i in items])
    return sid, stored


def summaries(html):
    return [chunk.split("</summary>")[0] for chunk in html.split("<summary>")[1:]]


def test_the_chat_page_shows_the_input_on_the_call_and_the_output_on_the_result(
        alice, browser):
    sid, _ = sdk_session(alice["manager"], {"role": "assistant", "content": "It is up."})
    html = browser.get(f"/sessions/{sid}/").content.decode()
    assert html.count("db-west-7") == 1  # the input, on the call only
    assert html.count("healthy: 12 ms") == 1
    assert summaries(html) == ["Tool call: lookup_host", "Tool result: lookup_host"]
    assert html.index("db-west-7") < html.index("healthy: 12 ms")


def test_the_output_message_fetched_alone_shows_its_result_only(alice, browser):
    """The fragment the page fetches when a live event names the new message. What is
    stored keeps the call's input beside the output (search finds the result by it, the
    model-input converter reads it): only the page leaves it out."""
    sid, stored = sdk_session(alice["manager"])
    html = browser.get(f"/sessions/{sid}/messages/{stored[2].id}/").content.decode()
    assert "db-west-7" not in html
    assert "healthy: 12 ms" in html and summaries(html) == ["Tool result: lookup_host"]
    assert stored[2].parts[0]["input"] == {"host": "db-west-7"}
    hits = alice["manager"].get_session(sid).search("db-west-7", 10)
    assert stored[2].id in {h.id for h in hits}


def test_an_output_kept_as_json_text_renders_its_result_only_too():
    """An item holding values JSON cannot (NaN here) is kept as text in the metadata."""
    from sessions_app.rendering import render_parts

    output = {**OUTPUT, "extra": float("nan")}
    message = item_to_message(output, {"k1": "lookup_host"}, {"k1": {"host": "db-west-7"}})
    assert "openai_item_json" in message["metadata"]
    html = render_parts(message)
    assert "db-west-7" not in html and "healthy: 12 ms" in html
    call = render_parts(item_to_message(CALL))
    assert "db-west-7" in call and summaries(call) == ["Tool call: lookup_host"]
