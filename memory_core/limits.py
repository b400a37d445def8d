"""Limits, patterns and literals defined once; the engine, models and API schemas build on them."""

from __future__ import annotations

import re
from typing import Any, Literal, TypeGuard

# ------------------------------------------------------------------ literals
Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")
Kind = Literal["readonly", "writable", "skill", "search"]
KINDS: tuple[Kind, ...] = ("readonly", "writable", "skill", "search")
Scope = Literal["session", "agent"]
SCOPES: tuple[Scope, ...] = ("session", "agent")

# ---------------------------------------------------------------------- ids
# Message ids and entry keys are the caller's: one column width holds them everywhere.
MAX_ID_LENGTH = 255
# Ids Arbor makes itself (sessions, agents, overlays): uuid text.
MAX_ROW_ID_LENGTH = 36

# --------------------------------------------------------------- text sizes
MAX_NAME = 200  # session/agent names, model and source
MAX_REASON = 100  # a session's end_reason
MAX_DESCRIPTION = 1000  # a block's or an entry's description
MAX_BLOCK_CONTENT = 1_000_000  # a block template's initial content
MAX_TEXT = 10_000_000  # message content, block writes, summaries
MAX_BLOCK_TOKENS = 10_000_000  # a block's max_tokens
MAX_PARTS = 10_000  # parts of one message
MAX_BATCH = 1000  # messages in one batch append
MAX_TEMPLATES = 100  # block templates of one agent
MAX_SEARCH_LIMIT = 200  # hits of one search
MAX_PATH_PAGE = 500  # messages of one path page (Session.get_path_page)

# ---------------------------------------------------------------- patterns
MAX_LABEL = 100
# A block label: what a tool argument, a URL segment and a prompt heading can all carry.
LABEL_PATTERN = rf"^[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{MAX_LABEL - 1}}}$"
LABEL = re.compile(LABEL_PATTERN)
# A skill folder inside the skills storage: relative, no '..', no empty segments.
FILES_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*)*$"

# ----------------------------------------------------------------- numbers
# Session token totals stay JSON-safe integers (exact in a double, so in every client).
MAX_TOKEN_TOTAL = 2**53 - 1
# A session's estimated cost, in the caller's currency unit.
MAX_COST = 1e12

# --------------------------------------------------------------------- NUL
# No database text column holds NUL (Postgres refuses it): ids with one are refused,
# free text has it removed, so what is reported is what is stored.
NUL = "\x00"
NO_NUL_PATTERN = r"^[^\x00]*$"


def strip_nul(text: str) -> str:
    """Free text as the databases can hold it."""
    return text.replace(NUL, "")


def is_id(value: Any, *, max_length: int = MAX_ID_LENGTH) -> TypeGuard[str]:
    """A string the id columns can hold: 1 to max_length characters, no NUL."""
    return isinstance(value, str) and 0 < len(value) <= max_length and NUL not in value

# Retention policies (sessions_app/lifecycle): past these a value is a mistake, not a policy.
MAX_RETENTION_DAYS = 36_500  # a hundred years
MAX_RETENTION_SESSIONS = 10_000_000
