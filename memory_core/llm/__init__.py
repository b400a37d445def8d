"""LLM clients behind one Protocol (`base.LLMClient`): any OpenAI-compatible
chat-completions endpoint (`openai`), Anthropic's Messages API (`anthropic`) and the
offline demo model (`demo`), with the HTTP plumbing both real clients share (`http`), the
history converters (`convert`) and the choice of the default model (`factory`).

Clients are synchronous. Failures reach callers as LLMError.
"""

from __future__ import annotations

from .anthropic import ANTHROPIC_URL, ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_MODEL, AnthropicClient
from .base import (
    PRICES,
    LLMClient,
    LLMError,
    LLMResponse,
    StreamEvent,
    ToolCall,
    Usage,
    cost,
    new_call_id,
    parse_arguments,
    usage_of,
)
from .convert import to_anthropic_messages, to_openai_messages
from .demo import DemoModel
from .factory import (
    client_from_config,
    client_from_env,
    default_llm,
    set_default_llm,
)
from .http import HTTPClient
from .openai import DEFAULT_OPENAI_MODEL, OPENAI_URL, OpenAICompatibleClient

__all__ = [
    "ANTHROPIC_URL", "ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_MODEL", "DEFAULT_OPENAI_MODEL",
    "OPENAI_URL", "PRICES", "AnthropicClient", "DemoModel", "HTTPClient", "LLMClient",
    "LLMError", "LLMResponse", "OpenAICompatibleClient", "StreamEvent", "ToolCall", "Usage",
    "client_from_config", "client_from_env", "cost", "default_llm", "new_call_id",
    "parse_arguments", "set_default_llm", "to_anthropic_messages", "to_openai_messages",
    "usage_of",
]
