"""Token estimates (SPEC §6): a heuristic by default, any counter pluggable."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol

MESSAGE_OVERHEAD = 4


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def __call__(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    """max(ceil(chars / 4), ceil(words * 1.3)): no tokenizer needed, errs on the high side."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), math.ceil(len(text.split()) * 1.3))


def estimate_message_tokens(
    messages: Iterable[Any], *, counter: TokenCounter | None = None, system_prompt: str = ""
) -> int:
    """Tokens of a history: each message's text plus a fixed overhead, plus the prompt."""
    count = counter or estimate_tokens
    total = count(system_prompt) if system_prompt else 0
    for message in messages:
        total += count(message.text) + MESSAGE_OVERHEAD
    return total


def tiktoken_counter(encoding: Any = "cl100k_base") -> TokenCounter:
    """A counter backed by tiktoken (`pip install arbor[tiktoken]`).

    `encoding` is an encoding name or a `tiktoken.Encoding`. Named encodings are
    downloaded by tiktoken once and cached (TIKTOKEN_CACHE_DIR), so offline machines
    need a warm cache or an Encoding object built from local files.
    Raises ImportError when tiktoken is not installed.
    """
    import tiktoken

    enc = tiktoken.get_encoding(encoding) if isinstance(encoding, str) else encoding

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=())) if text else 0

    return count
