"""Context block values (SPEC §4): how a block is declared (BlockSpec, from code or agent
templates), a declared block resolved to its provider (Block), and what a session reports
about its blocks, entries and frozen prompt. SessionContext (context.py) works on them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import InvalidInput
from .limits import KINDS, LABEL, MAX_BLOCK_TOKENS, NUL, SCOPES, Kind, Scope
from .messages import Mappable
from .providers.base import can_set

SPEC_FIELDS = ("description", "max_tokens", "kind", "scope", "content", "files")


@dataclass(frozen=True)
class BlockSpec:
    """How a block is declared: on an agent (template), in code, or at runtime."""

    label: str
    description: str | None = None
    max_tokens: int | None = None
    kind: Kind | None = None
    scope: Scope = "session"
    content: str | None = None  # read-only text, or a writable block's initial text
    files: str | None = None  # a skill folder in the file storage
    provider: Any = None  # a provider object; lives in memory, never stored

    @classmethod
    def build(cls, label: Any, **options: Any) -> BlockSpec:
        """Validate options into a spec. Raises InvalidInput naming the bad option."""
        if not isinstance(label, str) or not LABEL.match(label):
            raise InvalidInput(
                "label must be 1-100 letters, digits, '_', '-' or '.', starting with a letter, "
                f"digit or '_' (got {label!r})"
            )
        unknown = set(options) - set(SPEC_FIELDS) - {"provider"}
        if unknown:
            raise InvalidInput(f"unknown block options: {', '.join(sorted(unknown))}")
        max_tokens = options.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
            or not 0 < max_tokens <= MAX_BLOCK_TOKENS
        ):
            raise InvalidInput("max_tokens must be a positive integer")
        kind = options.get("kind")
        if kind is not None and kind not in KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(KINDS)}")
        scope: Scope = options.get("scope") or "session"
        if scope not in SCOPES:
            raise InvalidInput(f"scope must be one of {', '.join(SCOPES)}")
        for name in ("description", "content", "files"):
            value = options.get(name)
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string")
        files = options.get("files")
        if files is not None and (not files.strip("/") or ".." in files.split("/")
                                  or files.startswith("/") or NUL in files):
            raise InvalidInput("files must be a folder inside the skills storage")
        return cls(
            label=label, description=options.get("description") or None, max_tokens=max_tokens,
            kind=kind, scope=scope, content=options.get("content"), files=options.get("files"),
            provider=options.get("provider"),
        )

    def stored(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in SPEC_FIELDS if getattr(self, name) is not None}


@dataclass(frozen=True, slots=True)
class ContextBlock(Mappable):
    """What `get_context_block` reports."""

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    writable: bool
    is_skill: bool
    is_searchable: bool

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class ContextEntry(Mappable):
    """One entry of a skill or search block, as `get_context_entry` reports it."""

    label: str
    key: str
    content: str
    description: str | None
    source: dict[str, Any] | None = None  # {message_id, leaf_id} of its last write

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class Block:
    spec: BlockSpec
    kind: Kind
    provider: Any

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def settable(self) -> bool:
        return self.kind != "readonly" and can_set(self.provider)


@dataclass(frozen=True, slots=True)
class PromptStatus(Mappable):
    frozen: bool
    frozen_at: datetime | None
    up_to_date: bool
    changed_blocks: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"frozen": self.frozen, "frozen_at": self.frozen_at,
                "up_to_date": self.up_to_date, "changed_blocks": list(self.changed_blocks)}


def specs_from_templates(templates: Sequence[Mapping[str, Any]]) -> list[BlockSpec]:
    """Agent templates (SPEC §9 shape) as specs; bad templates are an InvalidInput."""
    if not isinstance(templates, Sequence):
        raise InvalidInput("context must be a list of block templates")
    specs = []
    for template in templates:
        if not isinstance(template, Mapping):
            raise InvalidInput("each block template must be an object")
        options = {k: v for k, v in template.items() if k != "label"}
        specs.append(BlockSpec.build(template.get("label"), **options))
    labels = [s.label for s in specs]
    if len(labels) != len(set(labels)):
        raise InvalidInput("block labels must be unique")
    return specs
