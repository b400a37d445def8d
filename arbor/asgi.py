"""ASGI entry point: HTTP through Django, WebSockets (live events) through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
django_asgi_app = get_asgi_application()  # sets Django up before the consumers import models

# Static files (admin CSS, the API docs page) come from WhiteNoise's middleware.
from channels.routing import ProtocolTypeRouter  # noqa: E402

from sessions_app.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": websocket_application()})
