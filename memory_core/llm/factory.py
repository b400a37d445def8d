"""Which model a session talks to when none was given (SPEC §15).

`client_from_config` is the rule, pure: an OpenAI-compatible `base_url` wins; else an
Anthropic key selects Anthropic; else an API key alone selects OpenAI itself; else the
offline demo model. The Django project builds its settings into a factory once at startup
and hands it over with `set_default_llm`; outside Django the default reads the
environment (`client_from_env`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from .anthropic import DEFAULT_ANTHROPIC_MODEL, AnthropicClient
from .base import LLMClient
from .demo import DemoModel
from .openai import DEFAULT_OPENAI_MODEL, OPENAI_URL, OpenAICompatibleClient

LLMFactory = Callable[[], LLMClient]
ENV_NAMES = {"base_url": "ARBOR_LLM_BASE_URL", "api_key": "ARBOR_LLM_API_KEY",
             "model": "ARBOR_LLM_MODEL", "anthropic_api_key": "ARBOR_ANTHROPIC_API_KEY"}


def _clean(value: str | None) -> str | None:
    return (value or "").strip() or None


def client_from_config(*, base_url: str | None = None, api_key: str | None = None,
                       model: str | None = None, anthropic_api_key: str | None = None
                       ) -> LLMClient:
    """The client these values name; blank values count as unset."""
    base_url, api_key, model = _clean(base_url), _clean(api_key), _clean(model)
    anthropic_api_key = _clean(anthropic_api_key)
    if base_url:
        return OpenAICompatibleClient(base_url, api_key, model or DEFAULT_OPENAI_MODEL)
    if anthropic_api_key:
        return AnthropicClient(anthropic_api_key, model or DEFAULT_ANTHROPIC_MODEL)
    if api_key:
        return OpenAICompatibleClient(OPENAI_URL, api_key, model or DEFAULT_OPENAI_MODEL)
    return DemoModel()


def client_from_env(env: Mapping[str, str] = os.environ) -> LLMClient:
    """client_from_config from ARBOR_LLM_BASE_URL, ARBOR_LLM_API_KEY, ARBOR_LLM_MODEL and
    ARBOR_ANTHROPIC_API_KEY, for using the engine without Django."""
    return client_from_config(**{key: env.get(name) for key, name in ENV_NAMES.items()})


_default_factory: LLMFactory = client_from_env


def set_default_llm(factory: LLMFactory) -> None:
    """Make `factory()` the model of every session not given one (`with_llm`)."""
    global _default_factory
    _default_factory = factory


def default_llm() -> LLMClient:
    """A new client from the default factory (each manager builds its own, at first use)."""
    return _default_factory()
