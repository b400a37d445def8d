"""A fixed text: identities, rules, anything the model must read but not change."""

from __future__ import annotations


class StaticProvider:
    def __init__(self, content: str) -> None:
        self.content = content

    def get(self) -> str:
        return self.content
