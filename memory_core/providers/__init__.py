"""Context providers: where a block's content comes from (SPEC §4)."""

from ..limits import Kind
from .base import (
    ReadOnlyProvider,
    SearchProvider,
    SearchResult,
    SkillProvider,
    WritableProvider,
    kind_of,
)
from .static import StaticProvider
from .stored import StoredSearch, StoredSkills, StoredText

__all__ = [
    "Kind",
    "ReadOnlyProvider",
    "SearchProvider",
    "SearchResult",
    "SkillProvider",
    "StaticProvider",
    "StoredSearch",
    "StoredSkills",
    "StoredText",
    "WritableProvider",
    "kind_of",
]
