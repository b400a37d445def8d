"""OrmStorage: memory_core's SessionStorage on Django's database.

One class made of mixins, each holding one kind of row; each storage method is written
once, in its module, and a part's bases are the parts it calls through `self`:

- paths.py     Paths: message reads: one message, leaf, children, the path CTE, tree, search
- branches.py  Branches: the newest leaf under a message, path pages, whether a message
               starts a branch
- messages.py  Messages: append, update, delete, clear, and `copy_path` (fork, import)
- overlays.py  Overlays: compaction overlays
- registry.py  Registry: session rows: create, list, update, delete, usage, fork, continue
- imported.py  Imported: sessions imported from other tools, each recorded once per agent
- context.py   ContextRows: blocks, values, entries, frozen prompts, skill states
- versions.py  VersionRows: block versions: head, insert and prune, pages, as-of reads, copies
- claims.py    Claims: a session's status, stop request and turn claim
- dense.py     Dense: search by meaning: the messages nearest a question (vectors.py,
               vector_index.py)
- sql.py       statement text, shared with the benchmarks' baselines
- rows.py      the message row to write and the search scope tokens (vendor-neutral)

Where the SQL differs by vendor, a dialect in storage/vendors/ owns the whole operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import connection

from .branches import Branches
from .claims import Claims
from .dense import Dense
from .imported import Imported
from .messages import engine_transaction
from .overlays import Overlays


class OrmStorage(Imported, Overlays, Branches, Claims, Dense):
    """The one SessionStorage implementation (Imported brings Registry, which brings
    Paths, Messages, ContextRows and VersionRows)."""

    def release(self) -> None:
        """Close this thread's connection: async callers run turns in worker threads."""
        connection.close()

    def transaction(self, *, bulk_writes: bool = False) -> Any:
        """The engine's write and the events it emits commit together (events.py)."""
        return engine_transaction(bulk_writes=bulk_writes)


if TYPE_CHECKING:  # mypy checks every member against the engine's Protocol, signatures too
    from memory_core.storage import SessionStorage

    _checked: SessionStorage = OrmStorage()
