"""Checks of the plain arguments the Python API takes (ids, lists, a parent or a new root,
page sizes; for the manager: agents, session names and labels, usage amounts): each
raises InvalidInput naming the argument, before anything is stored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput
from .limits import (
    MAX_COST,
    MAX_ID_LENGTH,
    MAX_NAME,
    MAX_PATH_PAGE,
    MAX_REASON,
    MAX_TOKEN_TOTAL,
    is_id,
    strip_nul,
)


def check_id(value: Any, what: str) -> str:
    if not is_id(value):
        raise InvalidInput(f"{what} must be a string of 1 to {MAX_ID_LENGTH} characters",
                           field=what)
    return value


def optional_id(value: Any, what: str) -> str | None:
    return None if value is None else check_id(value, what)


def parent_choice(parent_id: Any, root: Any) -> str | None:
    """The parent an append names: an id, or None for the latest leaf (root=False) or for
    no parent at all (root=True). Naming both a parent and root is refused."""
    if not isinstance(root, bool):
        raise InvalidInput("root must be true or false", field="root")
    parent = optional_id(parent_id, "parent_id")
    if root and parent is not None:
        raise InvalidInput("give parent_id or root, not both: root=true starts a new root "
                           "message, which has no parent")
    return parent


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an append goes, checked once (`placement`): under `parent_id`, else the
    latest leaf, or (root) as a new root; `if_latest` as append_message takes it. An
    append given one (`at=`) does not check it again."""

    parent_id: str | None = None
    root: bool = False
    if_latest: str | None = None


def placement(parent_id: Any = None, root: Any = False, if_latest: Any = None) -> Placement:
    """The rule for an append's parent_id, root and if_latest (InvalidInput naming the
    field, except for a parent and root given together)."""
    return Placement(parent_choice(parent_id, root), root, optional_id(if_latest, "if_latest"))


def page_limit(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PATH_PAGE:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_PATH_PAGE}")
    return value


def as_list(items: Any) -> Sequence[Any]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput("expected a list")
    return list(items)


# The SessionManager's arguments: an agent, a session's name and labels, usage amounts.
def agent_id_of(agent: Any) -> str:
    value = getattr(agent, "pk", agent)
    if not isinstance(value, str) or not value:
        raise InvalidInput("agent must be an Agent or its id")
    return str(value)


def session_name(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput("name must be a string")
    name = strip_nul(value).strip()
    if len(name) > MAX_NAME:
        raise InvalidInput(f"name is longer than {MAX_NAME} characters")
    return name


def optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise InvalidInput(f"{what} must be a string of at most {MAX_NAME} characters")
    return strip_nul(value)


def end_reason(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) > MAX_REASON):
        raise InvalidInput(f"end_reason must be a string of at most {MAX_REASON} characters")
    return optional_text(value, "end_reason")


def check_usage(*, input_tokens: Any, output_tokens: Any, cost: Any) -> None:
    """Token counts from 0 to MAX_TOKEN_TOTAL, a cost from 0 to MAX_COST."""
    for value, what in ((input_tokens, "input_tokens"), (output_tokens, "output_tokens")):
        if (not isinstance(value, int) or isinstance(value, bool)
                or not 0 <= value <= MAX_TOKEN_TOTAL):
            raise InvalidInput(f"{what} must be an integer from 0 to {MAX_TOKEN_TOTAL}")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost <= MAX_COST:
        raise InvalidInput(f"cost must be a number from 0 to {MAX_COST:g}")
