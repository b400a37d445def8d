"""The Import page's other formats (ChatGPT, Claude, Open WebUI, LibreChat, Pi): the same
engine call as the API's (memory_core.imports), its summary shown with a link to each
session. manage.import_page keeps Arbor's own documents and hands the rest here."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from memory_core import ArborError
from memory_core.imports import FORMATS, conversations, import_conversations, read
from memory_core.imports.reading import NotJson

from .. import access, models

LABELS = {"auto": "Detect from the file", "arbor": "Arbor session (Export JSON)",
          "chatgpt": "ChatGPT (conversations.json)", "claude": "Claude (conversations.json)",
          "openwebui": "Open WebUI (chat export)", "librechat": "LibreChat (.json)",
          "pi": "Pi session (.jsonl)"}
NAMES = {"chatgpt": "ChatGPT", "claude": "Claude", "openwebui": "Open WebUI",
         "librechat": "LibreChat", "pi": "Pi"}
CHOICES = [(k, LABELS[k]) for k in ("auto", "arbor", *FORMATS)]


def sniff(upload: Any, fmt: str) -> tuple[str | None, Any, list[str]]:
    """(format, parsed file, errors). "arbor" means: Arbor's own document, read again by
    the page's path (the upload is rewound)."""
    if upload is None:
        return None, None, ["Choose an exported session file (.json) to import."]
    limit = settings.ARBOR_MAX_BODY_BYTES
    if upload.size > limit:
        return None, None, [
            f"The file is {upload.size:,} bytes; the largest accepted is {limit:,}. "
            "Import bigger exports with `manage.py import_chats`."]
    if fmt == "arbor":
        return "arbor", None, []
    body = upload.read()
    upload.seek(0)
    name = (upload.name or "").lower()
    try:
        found, value = read(body, fmt, ndjson=name.endswith((".jsonl", ".ndjson")))
    except NotJson:
        return "arbor", None, []  # the Arbor path says why it is not JSON, as it always has
    except ArborError as exc:
        return None, None, [exc.detail]
    return found, value, []


def run(agent: models.Agent, fmt: str, value: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """The import's summary, or why nothing was imported."""
    try:
        summary = import_conversations(access.manager_for(agent), fmt,
                                       conversations(fmt, value))
    except ArborError as exc:
        return None, [f"The file could not be imported: {exc.detail}"]
    data = summary.to_dict()
    data["label"] = NAMES.get(fmt, fmt)
    data["total"] = sum(s["messages"] for s in data["sessions"])
    return data, []
