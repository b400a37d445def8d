"""JSON out: orjson for every response, and a direct path for large read responses."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.urls import register_converter
from ninja.renderers import BaseRenderer

from memory_core.limits import MAX_ID_LENGTH, NUL

CONTENT_TYPE = "application/json; charset=utf-8"


def _default(value: Any) -> Any:
    if isinstance(value, orjson.Fragment):  # stored JSON, for the fallback encoder below
        return orjson.loads(value.contents)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def dumps(data: Any) -> bytes:
    try:
        return orjson.dumps(data, default=_default, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        # orjson refuses strings it cannot encode as UTF-8; escape them instead of failing.
        return json.dumps(data, default=_default, ensure_ascii=True).encode()


class OrjsonRenderer(BaseRenderer):
    media_type = "application/json"

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> bytes:
        return dumps(data)


def json_response(data: Any, status: int = 200) -> HttpResponse:
    """For long reads (history, tree, export): the engine's dicts straight to bytes,
    skipping a pydantic round over thousands of messages. The operation still declares
    its response schema, and the schemathesis run checks the two agree."""
    return HttpResponse(dumps(data), status=status, content_type=CONTENT_TYPE)


class IdConverter:
    """A path segment that can be an id: 1-MAX_ID_LENGTH characters, no '/' and no NUL (which no
    database column can hold); anything else is an unmatched URL, a JSON 404."""

    regex = f"[^/{NUL}]{{1,{MAX_ID_LENGTH}}}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(IdConverter, "aid")
