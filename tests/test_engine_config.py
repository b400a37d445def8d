"""The engine's default model comes from Django settings (sessions_app.engine_config), the
one place that reads ARBOR_LLM_* / ARBOR_ANTHROPIC_API_KEY, as the README's table says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import override_settings

from memory_core import SessionManager
from memory_core.chat import resolve_llm
from memory_core.llm import (
    DEFAULT_ANTHROPIC_MODEL,
    OPENAI_URL,
    AnthropicClient,
    DemoModel,
    OpenAICompatibleClient,
    default_llm,
)

README = Path(__file__).resolve().parents[1] / "README.md"
BLANK = {"ARBOR_LLM_BASE_URL": "", "ARBOR_LLM_API_KEY": "", "ARBOR_LLM_MODEL": "",
         "ARBOR_ANTHROPIC_API_KEY": ""}


def readme_rows() -> dict[str, dict[str, str]]:
    """The README's "To use | Set" table: row label -> the settings it sets."""
    text = README.read_text()
    table = text[text.index("| To use | Set |"):].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        label, setting = line.strip("|").split("|", 1)
        values = dict(re.findall(r"`(ARBOR_[A-Z_]+)=([^`]*)`", setting))
        # "and optionally ..." shows a second form; the row holds with or without it.
        rows[label.strip()] = values
    return rows


def client_for(values: dict[str, str]):
    with override_settings(**{**BLANK, **values}):
        return default_llm()


def test_the_readme_table_holds():
    rows = readme_rows()
    assert set(rows) == {"OpenAI", "Any OpenAI-compatible server: vLLM, Ollama, llama.cpp",
                         "Anthropic", "Nothing"}
    openai = client_for(rows["OpenAI"])
    assert isinstance(openai, OpenAICompatibleClient) and openai.base_url == OPENAI_URL
    assert openai.model == "gpt-4o-mini"
    local = client_for(rows["Any OpenAI-compatible server: vLLM, Ollama, llama.cpp"])
    assert isinstance(local, OpenAICompatibleClient)
    assert (local.base_url, local.model) == ("http://127.0.0.1:11434/v1", "llama3.2")
    anthropic = client_for({"ARBOR_ANTHROPIC_API_KEY": "sk-ant"})
    assert isinstance(anthropic, AnthropicClient) and anthropic.model == DEFAULT_ANTHROPIC_MODEL
    assert client_for(rows["Anthropic"]).model == "claude-haiku-4-5"
    assert isinstance(client_for(rows["Nothing"]), DemoModel)


def test_settings_not_the_environment_choose_the_model(monkeypatch):
    monkeypatch.setenv("ARBOR_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ARBOR_ANTHROPIC_API_KEY", "sk-env")
    assert isinstance(client_for({}), DemoModel)
    with override_settings(**{**BLANK, "ARBOR_LLM_BASE_URL": "http://10.0.0.5:8000/v1/"}):
        assert default_llm().base_url == "http://10.0.0.5:8000/v1"


@pytest.mark.django_db
def test_a_session_without_with_llm_uses_the_settings_model():
    from tests.conftest import make_agent

    agent = make_agent("alice", "configured")
    with override_settings(**{**BLANK, "ARBOR_LLM_BASE_URL": "http://10.0.0.5:8000/v1",
                              "ARBOR_LLM_MODEL": "qwen3"}):
        manager = SessionManager.for_agent(agent)
        session = manager.get_session(manager.create().id)
        llm = resolve_llm(session)
    assert isinstance(llm, OpenAICompatibleClient) and llm.model == "qwen3"
    assert resolve_llm(session) is llm  # built once per manager, at first use
