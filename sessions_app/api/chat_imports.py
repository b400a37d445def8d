"""The import endpoint's other formats: conversations of ChatGPT, Claude, Open WebUI,
LibreChat and Pi (memory_core.imports). export.py dispatches here for anything that is
not Arbor's own session document."""

from __future__ import annotations

from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from ninja import Schema

from memory_core import SessionManager
from memory_core.errors import InvalidInput
from memory_core.imports import conversations, import_conversations, read

ImportFormat = Literal["auto", "arbor", "chatgpt", "claude", "openwebui", "librechat", "pi"]
NDJSON = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")


class ImportedSession(Schema):
    id: str
    name: str
    messages: int
    source_id: str


class SkippedConversation(Schema):
    source_id: str
    reason: str


class ImportOut(Schema):
    format: str
    sessions: list[ImportedSession]
    skipped: list[SkippedConversation]


# The OpenAPI body: Arbor's document as JSON (its schema kept), or any export's bytes.
FILE_BODY = {"type": "object", "required": ["file"],
             "properties": {"file": {"type": "string", "format": "binary"}}}
BODY_DOC = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/SessionDocument"}},
    "application/x-ndjson": {"schema": {"type": "string", "description": "a Pi session"}},
    "multipart/form-data": {"schema": FILE_BODY}}}}


def upload(request: HttpRequest) -> tuple[bytes, bool]:
    """(the file's bytes, whether they are JSON Lines): the body itself, or a multipart
    `file` field. ARBOR_MAX_BODY_BYTES applies to either (413)."""
    limit = settings.ARBOR_MAX_BODY_BYTES
    kind = (request.content_type or "").lower()
    if kind == "multipart/form-data":
        file = request.FILES.get("file")
        if file is None:
            raise InvalidInput("the multipart body needs a `file` field", field="file")
        if file.size is not None and file.size > limit:
            raise RequestDataTooBig("upload exceeds ARBOR_MAX_BODY_BYTES")
        name = (file.name or "").lower()
        return file.read(), name.endswith((".jsonl", ".ndjson"))
    body = request.body
    if len(body) > limit:
        raise RequestDataTooBig("request body exceeds ARBOR_MAX_BODY_BYTES")
    return body, kind in NDJSON


def sniff(body: bytes, fmt: str, ndjson: bool) -> tuple[str, Any]:
    """(format, parsed file); "arbor" for Arbor's own document (parsed again strictly)."""
    if fmt == "arbor":
        return "arbor", None
    return read(body, fmt, ndjson=ndjson)


def run(manager: SessionManager, fmt: str, value: Any) -> dict[str, Any]:
    return import_conversations(manager, fmt, conversations(fmt, value)).to_dict()
