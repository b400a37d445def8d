"""The engine's configuration, built from Django settings: the one place that reads
settings.ARBOR_LLM_* and ARBOR_ANTHROPIC_API_KEY (arbor/settings.py fills them from the
environment). Installed once, from SessionsAppConfig.ready()."""

from __future__ import annotations

from django.conf import settings

from memory_core.llm import LLMClient, client_from_config, set_default_llm


def llm_from_settings() -> LLMClient:
    """The model the settings name (read at each call, so override_settings applies)."""
    return client_from_config(
        base_url=getattr(settings, "ARBOR_LLM_BASE_URL", ""),
        api_key=getattr(settings, "ARBOR_LLM_API_KEY", ""),
        model=getattr(settings, "ARBOR_LLM_MODEL", ""),
        anthropic_api_key=getattr(settings, "ARBOR_ANTHROPIC_API_KEY", ""),
    )


def install() -> None:
    """Hand the engine its default model factory."""
    set_default_llm(llm_from_settings)
