"""Regenerate (a new answer beside an assistant message), chat under any message or as a
new root, and the offline demo model's numbered variants and pacing."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from memory_core import InvalidInput, NotFound, SessionManager
from memory_core.llm import default_llm
from memory_core.llm.demo import DemoModel
from tests.conftest import assistant_msg


class Recording(DemoModel):
    """The demo model, keeping each call's history and options."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[str], dict]] = []

    def complete(self, *, system, history, tools, **options):
        self.calls.append(([m.id for m in history], options))
        return super().complete(system=system, history=history, tools=tools, **options)


class Plain:
    """A client with the Protocol's signature only: it must never get `variant`."""

    model = "plain"

    def __init__(self) -> None:
        self.demo = DemoModel()

    def complete(self, *, system, history, tools):
        return self.demo.complete(system=system, history=history, tools=tools)

    def stream(self, *, system, history, tools):
        return self.demo.stream(system=system, history=history, tools=tools)


def make(agent, llm) -> SessionManager:
    return (SessionManager.for_agent(agent).with_llm(llm)
            .with_context("memory", description="Learned facts", max_tokens=200))


@pytest.fixture
def s(agent):
    manager = make(agent, DemoModel())
    return manager.get_session(manager.create("c").id)


def test_regenerate_makes_numbered_sibling_answers(s):
    first = s.chat("hello there")
    question = s.get_message(first.parent_id)
    second = s.regenerate(first.id)
    third = s.regenerate(second.id)
    assert second.parent_id == third.parent_id == question.id
    assert not first.text.startswith("(variant")
    assert second.text.startswith("(variant 2) ") and third.text.startswith("(variant 3) ")
    assert second.text.removeprefix("(variant 2) ") == first.text
    assert [m.id for m in s.get_branches(question.id)] == [first.id, second.id, third.id]
    assert s.get_latest_leaf().id == third.id
    assert [m.role for m in s.get_history()] == ["user", "assistant"]


def test_the_model_sees_the_path_up_to_the_parent(agent):
    llm = Recording()
    manager = make(agent, llm)
    s = manager.get_session(manager.create("c").id)
    s.chat("one")
    answer = s.chat("two")
    llm.calls.clear()
    s.regenerate(answer.id)
    history = [m.id for m in s.get_history(answer.parent_id)]
    assert llm.calls == [(history, {"variant": 2})]


def test_a_client_that_does_not_number_variants_gets_no_extra_argument(agent):
    manager = make(agent, Plain())
    s = manager.get_session(manager.create("c").id)
    answer = s.chat("hello")
    again = s.regenerate(answer.id)
    assert again.text == answer.text and again.id != answer.id
    streamed = list(s.regenerate(answer.id, stream=True))
    assert streamed[-1]["message"].parent_id == answer.parent_id


def test_regenerate_streams_like_chat(s):
    first = s.chat("hello there")
    events = list(s.regenerate(first.id, stream=True))
    assert events[-1]["type"] == "done"
    done = events[-1]["message"]
    assert done.parent_id == first.parent_id and done.text.startswith("(variant 2)")
    deltas = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert deltas == done.text
    assert s.storage.get_session(s.agent_id, s.id).status == "idle"


def test_regenerate_a_turn_that_used_a_tool(s):
    s.chat("remember that I like tea")
    answer = s.get_latest_leaf()
    call = s.get_history()[1]
    again = s.regenerate(call.id)  # the turn's first assistant message, the tool call
    assert again.text.startswith("(variant 2) Got it.")
    assert [m.role for m in s.get_history()] == ["user", "assistant", "assistant"]
    assert s.get_history()[1].id != call.id and answer.id != again.id


def test_regenerate_refuses_what_it_cannot_answer_again(s):
    first = s.chat("hello there")
    root_answer = s.append_message(assistant_msg("orphan"), root=True)
    before = s.get_message_count()
    with pytest.raises(NotFound):
        s.regenerate("missing")
    with pytest.raises(InvalidInput, match="only an assistant answer"):
        s.regenerate(first.parent_id)
    with pytest.raises(InvalidInput, match="no parent"):
        s.regenerate(root_answer.id)
    with pytest.raises(InvalidInput):
        s.regenerate("")
    with pytest.raises(NotFound):
        next(iter(s.regenerate("missing", stream=True)))
    assert s.get_message_count() == before
    assert s.storage.get_session(s.agent_id, s.id).status == "idle"


def test_edit_and_resend_under_the_originals_parent(s):
    s.chat("first question")
    original = s.chat("second question")
    asked = s.get_message(original.parent_id)
    edited = s.chat("second question, edited", parent_id=asked.parent_id)
    resent = s.get_message(edited.parent_id)
    assert resent.parent_id == asked.parent_id
    assert [m.id for m in s.get_branches(asked.parent_id)] == [asked.id, resent.id]


def test_chat_as_a_new_root(s):
    s.chat("hello there")
    answer = s.chat("a different topic", root=True)
    question = s.get_message(answer.parent_id)
    assert question.parent_id is None
    assert len(s.get_branches(None)) == 2
    with pytest.raises(InvalidInput, match="parent_id or root"):
        s.chat("x", parent_id=question.id, root=True)
    assert s.storage.get_session(s.agent_id, s.id).status == "idle"


def test_chat_under_any_message(s):
    first = s.chat("hello there")
    under = s.chat("under the question", parent_id=first.parent_id)
    assert s.get_message(under.parent_id).parent_id == first.parent_id


def test_the_demo_model_paces_its_stream():
    demo = DemoModel(stream_delay=0.05)
    start = time.monotonic()
    chunks = [e for e in demo.stream(system="", history=[], tools=[]) if e.type == "text_delta"]
    assert len(chunks) > 5
    assert time.monotonic() - start >= 0.05 * (len(chunks) - 1) * 0.9
    assert DemoModel().stream_delay == 0.0 and DemoModel(stream_delay=-1).stream_delay == 0.0


def test_the_setting_reaches_the_demo_model():
    blank = {"ARBOR_LLM_BASE_URL": "", "ARBOR_LLM_API_KEY": "", "ARBOR_LLM_MODEL": "",
             "ARBOR_ANTHROPIC_API_KEY": ""}
    with override_settings(**blank, ARBOR_DEMO_STREAM_DELAY=0.25):
        llm = default_llm()
    assert isinstance(llm, DemoModel) and llm.stream_delay == 0.25
    with override_settings(**blank, ARBOR_DEMO_STREAM_DELAY=0):
        assert default_llm().stream_delay == 0.0


def test_variants_leave_other_demo_answers_alone():
    demo = DemoModel()
    plain = demo.complete(system="", history=[], tools=[])
    assert demo.complete(system="", history=[], tools=[], variant=1).text == plain.text
    assert demo.complete(system="", history=[], tools=[], variant=4).text == (
        "(variant 4) " + plain.text)


@pytest.mark.django_db(transaction=True)
async def test_async_regenerate_and_stream(agent):
    from asgiref.sync import sync_to_async
    from django.db import connection

    manager = make(agent, DemoModel())
    s = await manager.aget_session((await manager.acreate("async")).id)
    answer = await s.achat("hello there")
    again = await s.aregenerate(answer.id)
    assert again.parent_id == answer.parent_id and again.text.startswith("(variant 2)")
    events = [e async for e in await s.aregenerate(answer.id, stream=True)]
    assert events[-1]["message"].text.startswith("(variant 3)")
    rooted = await s.achat("new topic", root=True)
    assert (await s.aget_message(rooted.parent_id)).parent_id is None
    await sync_to_async(lambda: connection.close())()

