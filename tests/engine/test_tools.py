"""Memory tools: what each block enables, three export formats, execute never raises."""

from __future__ import annotations

import jsonschema
import pytest

from memory_core import SessionManager
from tests.conftest import user_msg

OPENAI_TOOL = {
    "type": "object", "required": ["type", "function"], "additionalProperties": False,
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object", "required": ["name", "parameters"], "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                "description": {"type": "string"},
                "parameters": {"type": "object", "required": ["type"],
                               "properties": {"type": {"const": "object"}}},
                "strict": {"type": "boolean"},
            },
        },
    },
}
ANTHROPIC_TOOL = {
    "type": "object", "required": ["name", "input_schema"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
        "description": {"type": "string"},
        "input_schema": {"type": "object", "required": ["type"],
                         "properties": {"type": {"const": "object"}}},
    },
}
MCP_TOOL = {
    "type": "object", "required": ["name", "inputSchema"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "inputSchema": {"type": "object", "required": ["type"],
                        "properties": {"type": {"const": "object"},
                                       "properties": {"type": "object"},
                                       "required": {"type": "array", "items": {"type": "string"}}}},
    },
}


@pytest.fixture
def tool_manager(agent):
    return (
        SessionManager.for_agent(agent)
        .with_context("soul", kind="readonly", content="Identity")
        .with_context("memory", description="Learned facts", max_tokens=40)
        .with_context("skills", kind="skill", description="How-tos")
        .with_context("knowledge", kind="search", description="Reference")
    )


@pytest.fixture
def s(tool_manager):
    session = tool_manager.get_session(tool_manager.create("t").id)
    session.set_context_entry("skills", "deploy", "Step 1: build. Step 2: ship.", "Deploying")
    return session


def by_name(session):
    return {t.name: t for t in session.tools()}


def test_tools_follow_the_blocks(s, manager):
    assert set(by_name(s)) == {"set_context", "load_context", "unload_context",
                               "search_context", "session_search"}
    bare = manager.get_session(manager.create("bare").id)
    assert [t.name for t in bare.tools()] == ["session_search"]
    assert [t["function"]["name"] for t in manager.tools(format="openai")] == ["session_search"]


def test_descriptions_name_the_blocks_they_act_on(s):
    tools = by_name(s)
    assert "memory" in tools["set_context"].description and "40 tokens" in tools["set_context"].description
    assert "soul" not in tools["set_context"].description
    assert "skills" in tools["load_context"].description
    assert "knowledge" in tools["search_context"].description


@pytest.mark.parametrize("fmt,shape", [("openai", OPENAI_TOOL), ("anthropic", ANTHROPIC_TOOL),
                                       ("mcp", MCP_TOOL)])
def test_exported_formats_match_the_apis_shapes(s, fmt, shape):
    exported = s.tools(format=fmt)
    assert len(exported) == 5
    for tool in exported:
        jsonschema.validate(tool, shape)
        schema = tool.get("function", {}).get("parameters") or tool.get("input_schema") or tool["inputSchema"]
        jsonschema.Draft202012Validator.check_schema(schema)


def test_unknown_format_is_invalid(s):
    from memory_core import InvalidInput
    with pytest.raises(InvalidInput):
        s.tools(format="xml")


def test_set_context_replace_append_and_usage(s):
    tool = by_name(s)["set_context"]
    assert tool.execute({"label": "memory", "content": "likes tea"}) == "Updated memory: 3/40 tokens (8%) used."
    assert "used" in tool.execute({"label": "memory", "content": "and cake", "action": "append"})
    assert s.get_context_block("memory").content == "likes tea\nand cake"
    assert tool.execute({"label": "skills", "key": "review", "content": "Read diff",
                         "description": "Reviews"}).startswith("Saved entry")
    assert "review" in s.get_context_block("skills").content


@pytest.mark.parametrize("args,fragment", [
    ({"label": "nope", "content": "x"}, "must be one of"),
    ({"label": "soul", "content": "x"}, "must be one of"),
    ({"label": "memory"}, "missing required argument 'content'"),
    ({"label": "memory", "content": 5}, "must be of type string"),
    ({"label": "memory", "content": "word " * 100}, "limited to 40 tokens"),
    ({"label": "skills", "content": "x"}, "needs a 'key'"),
    ({"label": "memory", "content": "x", "key": "k"}, "takes no 'key'"),
    ({"label": "memory", "content": "x", "action": "delete"}, "must be one of"),
    ({"label": "memory", "content": "x", "bogus": 1}, "unknown argument"),
])
def test_set_context_bad_input_is_an_error_string_and_changes_nothing(s, args, fragment):
    s.replace_context_block("memory", "keep")
    result = by_name(s)["set_context"].call(args)
    assert result.is_error  # the model, the API and MCP clients are all told it failed
    assert result.content.startswith("Error:") and fragment in result.content
    assert s.get_context_block("memory").content == "keep"


@pytest.mark.parametrize("args", [None, "text", [1], 42])
def test_execute_never_raises_on_non_object_arguments(s, args):
    for tool in s.tools():
        assert tool.execute(args).startswith("Error:")


def test_execute_survives_a_broken_provider(manager):
    class Broken:
        def get(self):
            return ""

        def set(self, content):
            raise RuntimeError("disk on fire")

    session = manager.get_session(manager.create("b").id)
    session.add_context("fragile", provider=Broken())
    result = by_name(session)["set_context"].execute({"label": "fragile", "content": "x"})
    assert result == "Error: set_context failed unexpectedly"


def test_load_and_unload_skill_with_read_time_view(s):
    tools = by_name(s)
    s.append_message(user_msg("how do I deploy?"))
    content = tools["load_context"].execute({"label": "skills", "key": "deploy"})
    assert content == "Step 1: build. Step 2: ship."
    # Record the call the way an agent loop stores it (split form).
    s.append_message({"role": "assistant", "parts": [{"type": "tool-call", "toolCallId": "c1",
                     "toolName": "load_context", "input": {"label": "skills", "key": "deploy"}}]})
    s.append_message({"role": "tool", "parts": [{"type": "tool-result", "toolCallId": "c1",
                     "toolName": "load_context", "output": content}]})
    # And the AI SDK single-part form.
    s.append_message({"role": "assistant", "parts": [{"type": "tool-load_context", "toolCallId": "c2",
                     "state": "output-available", "input": {"label": "skills", "key": "deploy"},
                     "output": content}]})
    assert [sk["key"] for sk in s.get_loaded_skills()] == ["deploy"]
    assert tools["unload_context"].execute({"label": "skills", "key": "deploy"}).startswith("Unloaded")
    assert s.get_loaded_skills() == []
    history = s.get_history()
    assert history[2].parts[0]["output"] == "[skill unloaded: deploy]"
    assert history[3].parts[0]["output"] == "[skill unloaded: deploy]"
    raw = s.get_history(raw=True)
    assert raw[2].parts[0]["output"] == content  # stored message untouched
    # Still loadable; a result stored after the unload shows in full, the old ones do not.
    assert tools["load_context"].execute({"label": "skills", "key": "deploy"}) == content
    s.append_message({"role": "assistant", "parts": [{"type": "tool-load_context", "toolCallId": "c3",
                     "state": "output-available", "input": {"label": "skills", "key": "deploy"},
                     "output": content}]})
    history = s.get_history()
    assert history[-1].parts[0]["output"] == content
    assert history[3].parts[0]["output"] == "[skill unloaded: deploy]"


def test_unload_of_a_skill_not_loaded_and_unknown_skill_are_errors(s):
    tools = by_name(s)
    assert tools["unload_context"].execute({"label": "skills", "key": "deploy"}).startswith("Error:")
    assert tools["load_context"].execute({"label": "skills", "key": "nope"}).startswith("Error:")
    assert s.get_loaded_skills() == []


def test_clear_messages_forgets_loaded_skills(s):
    s.load_skill("skills", "deploy")
    s.clear_messages()
    assert s.get_loaded_skills() == []


def test_search_context_and_session_search_show_dates(s, tool_manager):
    s.set_context_entry("knowledge", "hosts", "The health check hits api-3.internal")
    tools = by_name(s)
    found = tools["search_context"].execute({"label": "knowledge", "query": "which host for health check?"})
    assert found.startswith("- [hosts] (") and "api-3.internal" in found
    assert tools["search_context"].execute({"label": "knowledge", "query": "zebra"}).startswith("No entries")
    past = tool_manager.get_session(tool_manager.create("past").id)
    past.append_message(user_msg("We moved the deployment to Friday"))
    hits = tools["session_search"].execute({"query": "deployment day", "limit": 5})
    assert "We moved the deployment to Friday" in hits
    assert hits[2:6].isdigit()  # "- 2026-..." the date leads each hit
    assert tools["session_search"].execute({"query": "x", "limit": 0}).startswith("Error:")


def test_with_searchable_history_adds_a_search_block(agent):
    m = SessionManager.for_agent(agent).with_searchable_history("history")
    s1 = m.get_session(m.create("one").id)
    s1.append_message(user_msg("the launch code is tulip"))
    s2 = m.get_session(m.create("two").id)
    block = s2.get_context_block("history")
    assert block.is_searchable and block.content == "2 sessions available for search."
    assert s2.freeze_system_prompt().splitlines()[1] == (
        "HISTORY (Cross-session conversation history) [searchable]")
    result = by_name(s2)["search_context"].execute({"label": "history", "query": "launch code"})
    assert "tulip" in result
