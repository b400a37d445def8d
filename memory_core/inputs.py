"""Checks of the plain arguments the Python API takes (ids, lists, a parent or a new root,
page sizes): each raises InvalidInput naming the argument, before anything is stored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import InvalidInput
from .limits import MAX_ID_LENGTH, MAX_PATH_PAGE, is_id


def check_id(value: Any, what: str) -> str:
    if not is_id(value):
        raise InvalidInput(f"{what} must be a string of 1 to {MAX_ID_LENGTH} characters")
    return value


def optional_id(value: Any, what: str) -> str | None:
    return None if value is None else check_id(value, what)


def parent_choice(parent_id: Any, root: Any) -> str | None:
    """The parent an append names: an id, or None for the latest leaf (root=False) or for
    no parent at all (root=True). Naming both a parent and root is refused."""
    if not isinstance(root, bool):
        raise InvalidInput("root must be true or false")
    parent = optional_id(parent_id, "parent_id")
    if root and parent is not None:
        raise InvalidInput("give parent_id or root, not both: root=true starts a new root "
                           "message, which has no parent")
    return parent


def page_limit(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PATH_PAGE:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_PATH_PAGE}")
    return value


def as_list(items: Any) -> Sequence[Any]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput("expected a list")
    return list(items)
