"""Provider kinds, told apart by the methods a provider has."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ..limits import Kind


@runtime_checkable
class ReadOnlyProvider(Protocol):
    def get(self) -> str: ...


@runtime_checkable
class WritableProvider(Protocol):
    def get(self) -> str: ...

    def set(self, content: str) -> None: ...


@runtime_checkable
class SkillProvider(Protocol):
    """`get()` lists `- key: description` lines; `load(key)` returns the content or None.
    May also have `set(key, content, description)`."""

    def get(self) -> str: ...

    def load(self, key: str) -> str | None: ...


@runtime_checkable
class SearchProvider(Protocol):
    """`get()` is a summary; `search(query)` the best entries. May have `set(key, content)`."""

    def get(self) -> str: ...

    def search(self, query: str) -> list[SearchResult]: ...


@dataclass(frozen=True, slots=True)
class SearchResult:
    key: str
    content: str
    updated_at: datetime | None = None
    score: float = 0.0


def kind_of(provider: Any) -> Kind:
    """search, then skill, then writable, else read-only (the prompt tag order)."""
    if callable(getattr(provider, "search", None)):
        return "search"
    if callable(getattr(provider, "load", None)):
        return "skill"
    if callable(getattr(provider, "set", None)):
        return "writable"
    return "readonly"


def can_set(provider: Any) -> bool:
    return callable(getattr(provider, "set", None))


def read_entry(provider: Any, key: str) -> tuple[str, str] | None:
    """(content, description) from a provider: the database-backed ones keep both;
    skills kept elsewhere (files) only load."""
    if callable(getattr(provider, "entry", None)):
        found = provider.entry(key)
        return None if found is None else (str(found[0]), str(found[1] or ""))
    if callable(getattr(provider, "load", None)):
        content = provider.load(key)
        return None if content is None else (str(content), "")
    return None
