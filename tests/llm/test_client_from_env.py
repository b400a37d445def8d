"""client_from_env and client_from_config pick the model SPEC §15's variables name."""

from __future__ import annotations

from memory_core.llm import (
    OPENAI_URL,
    OpenAICompatibleClient,
    client_from_config,
    client_from_env,
)
from memory_core.llm.anthropic import DEFAULT_ANTHROPIC_MODEL, AnthropicClient
from memory_core.llm.demo import DemoModel

from .conftest import msg
from .fakes import Reply, openai_completion


def test_base_url_selects_the_openai_compatible_client():
    llm = client_from_env({"ARBOR_LLM_BASE_URL": "http://localhost:11434/v1/",
                           "ARBOR_LLM_MODEL": "llama3.2", "ARBOR_ANTHROPIC_API_KEY": "x"})
    assert isinstance(llm, OpenAICompatibleClient)
    assert llm.base_url == "http://localhost:11434/v1"
    assert llm.model == "llama3.2"
    assert llm.label == "OpenAI-compatible (llama3.2)"


def test_anthropic_key_selects_anthropic_with_a_default_model():
    llm = client_from_env({"ARBOR_ANTHROPIC_API_KEY": "sk-ant"})
    assert isinstance(llm, AnthropicClient)
    assert llm.model == DEFAULT_ANTHROPIC_MODEL
    assert llm.label == f"Anthropic ({DEFAULT_ANTHROPIC_MODEL})"
    named = client_from_env({"ARBOR_ANTHROPIC_API_KEY": "sk-ant",
                             "ARBOR_LLM_MODEL": "claude-sonnet-4-5"})
    assert named.model == "claude-sonnet-4-5"


def test_an_api_key_alone_means_openai_itself():
    llm = client_from_env({"ARBOR_LLM_API_KEY": "sk-x"})
    assert isinstance(llm, OpenAICompatibleClient)
    assert llm.base_url == OPENAI_URL


def test_nothing_configured_means_the_offline_demo_model():
    for env in ({}, {"ARBOR_LLM_BASE_URL": "  ", "ARBOR_ANTHROPIC_API_KEY": ""}):
        llm = client_from_env(env)
        assert isinstance(llm, DemoModel)
        assert llm.label == "offline demo model"


def test_configured_client_talks_to_the_endpoint(openai_server):
    openai_server.script(Reply(body=openai_completion("from the server", model="qwen")))
    llm = client_from_env({"ARBOR_LLM_BASE_URL": openai_server.url, "ARBOR_LLM_MODEL": "qwen",
                           "ARBOR_LLM_API_KEY": "k"})
    assert llm.complete(system="", history=[msg("user", "hi")], tools=[]).text == (
        "from the server")
    assert openai_server.last.headers["authorization"] == "Bearer k"


def test_client_from_config_is_the_same_rule_without_the_environment(monkeypatch):
    monkeypatch.setenv("ARBOR_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(client_from_config(), DemoModel)
    assert isinstance(client_from_config(base_url=" ", anthropic_api_key=""), DemoModel)
    llm = client_from_config(anthropic_api_key="sk-ant", model="claude-sonnet-4-5")
    assert isinstance(llm, AnthropicClient) and llm.model == "claude-sonnet-4-5"
    local = client_from_config(base_url="http://localhost:8080/v1", api_key="k",
                               anthropic_api_key="sk-ant")
    assert isinstance(local, OpenAICompatibleClient)
    assert local.base_url == "http://localhost:8080/v1"
