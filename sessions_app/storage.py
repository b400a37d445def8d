"""OrmStorage: memory_core's SessionStorage (and ContextStorage) on Django's database.

Three halves, one per module: the registry (registry_storage.py), messages in SQL
(message_storage.py) and context blocks (context_storage.py).
"""

from __future__ import annotations

from django.db import connection

from .context_storage import OrmContextStorage
from .message_storage import OrmMessages
from .registry_storage import OrmRegistry


class OrmStorage(OrmRegistry, OrmMessages, OrmContextStorage):
    """The one SessionStorage (and ContextStorage) implementation."""

    def release(self) -> None:
        """Close this thread's connection: async callers run turns in worker threads."""
        connection.close()
