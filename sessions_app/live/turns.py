"""Chat turns started from the browser run in a thread of the server process.

The request answers at once; the answer reaches every page watching the session as live
events (`message.delta` while it streams, then the stored messages), so the tab that
asked and any other tab see the same thing. The thread publishes on the server's event
loop, where the WebSocket consumers live, and gives its database connection back between
steps (a slow model holds none of the pool's few) and at the end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db import close_old_connections, connection

from .. import db_pool
from . import events

log = logging.getLogger(__name__)


def start(turn: Callable[[], Iterable[Any] | Any], *, name: str) -> threading.Thread:
    """Run `turn` (a streaming chat call; its events are drained) in a daemon thread."""
    loop = events.server_loop()

    def run() -> None:
        events.use_loop(loop)
        close_old_connections()
        try:
            result = turn()
            if isinstance(result, Iterator):  # a streaming turn: run it to its end
                for _ in result:
                    db_pool.give_back()  # not held while the model thinks
        except Exception:  # the engine stored the error state and announced it
            log.warning("chat turn %s failed", name, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=run, name=f"arbor-turn-{name}", daemon=True)
    thread.start()
    return thread
