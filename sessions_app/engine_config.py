"""The engine's configuration, built from Django settings: the one place that reads
settings.ARBOR_LLM_*, ARBOR_ANTHROPIC_API_KEY, ARBOR_DEMO_STREAM_DELAY and
ARBOR_MAX_TOOL_OUTPUT_CHARS, ARBOR_BLOCK_VERSIONS (arbor/settings.py fills them from the environment;
the embedder for search by meaning comes from semantic/config.py); every session's writes emit through
the Channels sink (sessions_app/live/events.py). Installed once, from SessionsAppConfig.ready()."""

from __future__ import annotations

from django.conf import settings

from memory_core.config import SessionConfig, set_default_config
from memory_core.llm import DemoModel, LLMClient, client_from_config, set_default_llm
from memory_core.messages import MAX_TOOL_OUTPUT_CHARS
from memory_core.versions import DEFAULT_KEEP

from .live.events import ChannelsSink
from .providers import FileSkills
from .semantic import config as semantic_config

DEFAULT_DEMO_STREAM_DELAY = 0.03


def demo_stream_delay() -> float:
    """Seconds between the chunks an offline model streams (ARBOR_DEMO_STREAM_DELAY)."""
    return max(0.0, float(getattr(settings, "ARBOR_DEMO_STREAM_DELAY",
                                  DEFAULT_DEMO_STREAM_DELAY)))


def llm_from_settings() -> LLMClient:
    """The model the settings name (read at each call, so override_settings applies);
    with none, the offline demo model, paced by ARBOR_DEMO_STREAM_DELAY."""
    client = client_from_config(
        base_url=getattr(settings, "ARBOR_LLM_BASE_URL", ""),
        api_key=getattr(settings, "ARBOR_LLM_API_KEY", ""),
        model=getattr(settings, "ARBOR_LLM_MODEL", ""),
        anthropic_api_key=getattr(settings, "ARBOR_ANTHROPIC_API_KEY", ""),
    )
    if isinstance(client, DemoModel):
        return DemoModel(stream_delay=demo_stream_delay())
    return client


def config_from_settings() -> SessionConfig:
    """Every SessionManager's starting config: the tool-output limit and skill files
    from settings (read per manager, so override_settings applies)."""
    return SessionConfig(
        max_tool_output_chars=int(getattr(settings, "ARBOR_MAX_TOOL_OUTPUT_CHARS",
                                          MAX_TOOL_OUTPUT_CHARS)),
        file_skills=FileSkills,
        events=ChannelsSink(),
        embedder=semantic_config.embedder,
        block_versions=int(getattr(settings, "ARBOR_BLOCK_VERSIONS", DEFAULT_KEEP)),
        compact_threshold=getattr(settings, "ARBOR_COMPACT_AFTER", None) or None,
    )


def install() -> None:
    """Hand the engine its default model factory and its starting config."""
    set_default_llm(llm_from_settings)
    set_default_config(config_from_settings)
