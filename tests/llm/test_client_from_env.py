"""client_from_env picks the model SPEC §15's environment variables name."""

from __future__ import annotations

from memory_core.demo_model import DemoModel
from memory_core.llm import OPENAI_URL, OpenAICompatibleClient, client_from_env
from memory_core.llm_anthropic import DEFAULT_ANTHROPIC_MODEL, AnthropicClient

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
