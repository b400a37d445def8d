"""Arbor's engine: tree-structured conversation memory. No web code lives here."""

from .errors import (
    ArborError,
    CompactionError,
    Conflict,
    InvalidInput,
    NotFound,
    OverBudget,
    ReadOnly,
)
from .manager import SessionManager
from .messages import Message, SessionInfo
from .search import SearchHit
from .session import Session
from .storage import SessionStorage
from .tree import Compaction, PathPage, SiblingInfo, TreeRow

__all__ = [
    "ArborError",
    "Compaction",
    "CompactionError",
    "Conflict",
    "InvalidInput",
    "Message",
    "NotFound",
    "OverBudget",
    "PathPage",
    "ReadOnly",
    "SearchHit",
    "Session",
    "SessionInfo",
    "SessionManager",
    "SessionStorage",
    "SiblingInfo",
    "TreeRow",
]
