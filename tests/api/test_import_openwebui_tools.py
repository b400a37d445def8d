"""Open WebUI's tool calls (issue 30): an answer's `<details type="tool_calls">` blocks
import as AI SDK tool parts, call and result, in their place among its text; other and
malformed blocks stay text. The blocks are written as Open WebUI writes them: attribute
values HTML-escaped JSON, the arguments the model's JSON text encoded once more."""

from __future__ import annotations

import html
import json

import orjson
from django.test import Client

from memory_core.imports.openwebui_tools import content_parts
from tests.api.conftest import ok
from tests.api.test_import_chats import history, imported
from tests.imports import exports as ex


def attr(value: object) -> str:
    return html.escape(json.dumps(value, ensure_ascii=False))


def call_block(call_id: str, name: str, arguments: str, result: str | None = None) -> str:
    if result is None:
        return (f'<details type="tool_calls" done="false" id="{call_id}" name="{name}" '
                f'arguments="{attr(arguments)}">\n<summary>Executing...</summary>\n</details>\n')
    return (f'<details type="tool_calls" done="true" id="{call_id}" name="{name}" '
            f'arguments="{attr(arguments)}" result="{attr(result)}" files="" '
            f'embeds="{attr("")}">\n<summary>Tool Executed</summary>\n</details>\n')


REASONING = ('<details type="reasoning" done="true" duration="2">\n'
             "<summary>Thought for 2 seconds</summary>\n&gt; The user wants weather.\n</details>\n")
NAMELESS = ('<details type="tool_calls" done="true" id="call_x" arguments="{}">\n'
            "<summary>Tool Executed</summary>\n</details>\n")
BROKEN = ('<details type="tool_calls" done="true" id="call_y" name="lookup" '
          'arguments="{not json" result="&quot;x&quot;">\n<summary>Tool Executed</summary>\n'
          "</details>\n")

ANSWER = ("Let me check the weather.\n"
          + call_block("call_w1", "get_weather", '{"city": "Lisbon", "unit": "C"}',
                       "18 °C, clear \"sky\" <no rain>")
          + call_block("call_t2", "get_time", '{"zone": "Europe/Lisbon"}')
          + "It's 18 °C & clear in Lisbon.")


def export_with(content: str) -> bytes:
    chats = ex.openwebui()
    messages = chats[0]["chat"]["history"]["messages"]
    messages["a1"]["content"] = content
    return orjson.dumps(chats)


def test_tool_call_blocks_become_tool_parts_in_place(api, agent_id):
    chat = imported(api, agent_id, export_with(ANSWER))["sessions"][0]
    answer = history(api, chat["id"])[1]
    assert answer["role"] == "assistant"
    assert answer["parts"] == [
        {"type": "text", "text": "Let me check the weather."},
        {"type": "dynamic-tool", "toolCallId": "call_w1", "toolName": "get_weather",
         "input": {"city": "Lisbon", "unit": "C"}, "state": "output-available",
         "output": "18 °C, clear \"sky\" <no rain>"},
        {"type": "dynamic-tool", "toolCallId": "call_t2", "toolName": "get_time",
         "input": {"zone": "Europe/Lisbon"}, "state": "input-available"},
        {"type": "text", "text": "It's 18 °C & clear in Lisbon."},
    ]
    # The question's parts and the other answers are as before.
    assert history(api, chat["id"])[0]["parts"][0] == {"type": "text",
                                                      "text": "Plan a day in Sintra"}


def test_the_chat_page_shows_the_call_and_its_result(api, agent_id, alice_agent):
    chat = imported(api, agent_id, export_with(ANSWER))["sessions"][0]
    page = Client()
    page.force_login(alice_agent.owner)
    body = page.get(f"/sessions/{chat['id']}/").content.decode()
    assert "Tool call: get_weather" in body and "Tool result: get_weather" in body
    assert "Tool call: get_time" in body
    assert "&quot;Lisbon&quot;" in body  # the arguments, escaped in the page
    assert "tool_calls" not in body  # no block left as text


def test_search_finds_the_answer_by_its_tool_call(api, agent_id):
    chat = imported(api, agent_id, export_with(ANSWER))["sessions"][0]
    answer = history(api, chat["id"])[1]
    hits = ok(api.get(f"/agents/{agent_id}/search", q="get_weather Europe"))["items"]
    assert answer["id"] in [h["id"] for h in hits]


def test_other_and_malformed_blocks_stay_text(api, agent_id):
    content = REASONING + "Here you go.\n" + NAMELESS + BROKEN
    chat = imported(api, agent_id, export_with(content))["sessions"][0]
    answer = history(api, chat["id"])[1]
    assert answer["parts"] == [{"type": "text", "text": content}]


def test_a_result_written_as_the_blocks_text_and_arguments_not_json():
    content = ('<details type="tool_calls" done="true" id="c1" name="run_sql" '
               'arguments="&quot;SELECT 1&quot;">\n<summary>Tool Executed</summary>\n'
               "[{&quot;one&quot;: 1}]\n</details>\nDone.")
    assert content_parts(content, "m1") == [
        {"type": "dynamic-tool", "toolCallId": "c1", "toolName": "run_sql",
         "input": "SELECT 1", "state": "output-available", "output": '[{"one": 1}]'},
        {"type": "text", "text": "Done."}]
    # No id: one made from the message's, numbered in order.
    bare = '<details type="tool_calls" done="false" name="ping">\n<summary>…</summary>\n</details>'
    assert content_parts(bare, "m2") == [
        {"type": "dynamic-tool", "toolCallId": "m2-call-1", "toolName": "ping", "input": {},
         "state": "input-available"}]


def test_a_users_message_is_never_read_for_blocks(api, agent_id):
    chats = ex.openwebui()
    chats[0]["chat"]["history"]["messages"]["u1"]["content"] = ANSWER
    chat = imported(api, agent_id, orjson.dumps(chats))["sessions"][0]
    assert history(api, chat["id"])[0]["parts"][0] == {"type": "text", "text": ANSWER}
