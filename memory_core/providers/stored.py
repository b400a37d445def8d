"""Database-backed providers. Each gets a ContextStorage and an already-scoped key."""

from __future__ import annotations

from ..storage import ContextStorage
from ..words import query_terms
from .base import SearchResult

SEARCH_LIMIT = 10


class StoredText:
    """A writable block's text (the default provider)."""

    def __init__(self, store: ContextStorage, key: str, initial: str = "") -> None:
        self.store = store
        self.key = key
        self.initial = initial

    def get(self) -> str:
        value = self.store.get_value(self.key)
        return self.initial if value is None else value

    def set(self, content: str) -> None:
        self.store.set_value(self.key, content)


class StoredSkills:
    """Loadable documents kept in the database."""

    def __init__(self, store: ContextStorage, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    def get(self) -> str:
        return "\n".join(
            f"- {key}: {description}" if description else f"- {key}"
            for key, description in self.store.list_entries(self.namespace)
        )

    def load(self, key: str) -> str | None:
        entry = self.store.get_entry(self.namespace, key)
        return entry[0] if entry else None

    def entry(self, key: str) -> tuple[str, str] | None:
        """(content, description) of one skill, without loading it."""
        return self.store.get_entry(self.namespace, key)

    def set(self, key: str, content: str, description: str = "") -> None:
        self.store.put_entry(self.namespace, key, content, description)


class StoredSearch:
    """Searchable knowledge: full-text entries under one namespace."""

    def __init__(self, store: ContextStorage, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    def get(self) -> str:
        return f"{self.store.count_entries(self.namespace)} entries indexed."

    def search(self, query: str) -> list[SearchResult]:
        terms = query_terms(query)
        if not terms:
            return []
        return [
            SearchResult(key, content, updated_at, score)
            for key, _desc, content, updated_at, score in self.store.search_entries(
                self.namespace, terms, SEARCH_LIMIT
            )
        ]

    def entry(self, key: str) -> tuple[str, str] | None:
        """(content, description) of one entry."""
        return self.store.get_entry(self.namespace, key)

    def set(self, key: str, content: str) -> None:
        self.store.put_entry(self.namespace, key, content, "")
