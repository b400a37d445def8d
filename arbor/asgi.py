"""ASGI entry point: HTTP through Django (and /mcp/ through the MCP server), WebSockets
(live events) through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
django_asgi_app = get_asgi_application()  # sets Django up before the consumers import models

# Static files (admin CSS, the API docs page) come from WhiteNoise's middleware.
from channels.routing import ProtocolTypeRouter  # noqa: E402

from sessions_app.live.routing import websocket_application  # noqa: E402
from sessions_app.mcp.http import with_mcp  # noqa: E402

# /mcp/: the MCP server over streamable HTTP (with the `mcp` extra); the rest is Django.
application = ProtocolTypeRouter({"http": with_mcp(django_asgi_app),
                                  "websocket": websocket_application()})

# Background upkeep (sessions_app/lifecycle/worker.py): erased paths leave this worker's
# cache; retention policies, purges, outbox pruning and compaction retries run in one
# worker at a time, whichever holds the job's lock (sessions_app/storage/jobs.py).
# ARBOR_LIFECYCLE_WORKER=0 leaves them to `manage.py apply_retention` and `manage.py purge`.
from sessions_app.lifecycle import worker as lifecycle_worker  # noqa: E402

lifecycle_worker.start()
# Messages are embedded for search by meaning in the background, never during a write
# (sessions_app/semantic/worker.py; ARBOR_EMBEDDINGS_WORKER=0 leaves it to `manage.py embed`).
from sessions_app.semantic import worker  # noqa: E402

worker.start()
