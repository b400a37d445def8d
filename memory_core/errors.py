"""The engine's error family. Each error has a stable `code`; HTTP statuses live in the API."""

from __future__ import annotations


class ArborError(Exception):
    """Base of every error the engine raises on purpose."""

    code = "error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFound(ArborError):
    """An id that does not exist, or that belongs to someone else (they look alike)."""

    code = "not_found"


class Conflict(ArborError):
    """The write contradicts what is stored (same id with other content, a moved leaf)."""

    code = "conflict"

    def __init__(self, detail: str, *, current_leaf_id: str | None = None) -> None:
        super().__init__(detail)
        self.current_leaf_id = current_leaf_id


class CompactionError(ArborError):
    """The summariser failed or wrote nothing usable; nothing was changed."""

    code = "compaction_failed"


class InvalidInput(ArborError):
    """Input of the wrong shape or type; `field` names the field at fault, when one is."""

    code = "invalid"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.field = field


class OverBudget(InvalidInput):
    """A block write larger than the block's max_tokens; detail names limit and size."""

    code = "over_budget"


class ReadOnly(InvalidInput):
    """A write to a read-only block."""

    code = "read_only"
