"""Every error the API answers, and the one table from exception to HTTP status.

Errors are always JSON `{"detail": <str>, "code": <str>}`, never an HTML page or a
traceback, whatever raised them: the engine, ninja's validation, the JSON parser,
Django's body-size guard, a full database pool (503 with Retry-After: db_pool.py), or a
bug (logged, answered 500).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from memory_core import ArborError, CompactionError, Conflict, InvalidInput, NotFound
from memory_core.llm import LLMError

from .. import db_pool

log = logging.getLogger("sessions_app.api")


class BadJson(InvalidInput):
    """A body that is not strict JSON (NaN, lone surrogates, integers past 64 bits...)."""

    code = "invalid_json"


class Forbidden(ArborError):
    """The key may not do this at all (not: may not see this resource; that is NotFound)."""

    code = "forbidden"


# The one table: the most specific class in an error's MRO decides.
STATUS: dict[type[Exception], int] = {
    NotFound: 404,
    Conflict: 409,
    InvalidInput: 422,  # OverBudget, ReadOnly, BadJson too
    Forbidden: 403,
    LLMError: 502,  # a model that failed is the upstream's fault, not the caller's
    CompactionError: 502,  # the summariser (a model) failed or wrote nothing usable
    ArborError: 400,
}
CODES_BY_STATUS = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                   405: "method_not_allowed", 409: "conflict", 413: "too_large",
                   422: "invalid", 429: "throttled", 502: "bad_gateway"}


def status_of(exc: ArborError) -> int:
    return next(STATUS[k] for k in type(exc).__mro__ if k in STATUS)


def error_body(detail: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"detail": detail, "code": code, **{k: v for k, v in extra.items() if v is not None}}


def json_error(status: int, detail: str, code: str | None = None, **extra: Any) -> HttpResponse:
    """An error response outside ninja's handlers (unmatched URLs, wrong methods)."""
    body = error_body(detail, code or CODES_BY_STATUS.get(status, "error"), **extra)
    return HttpResponse(orjson.dumps(body), status=status, content_type="application/json")


# ----------------------------------------------------------------- strict JSON
# A run of 19 digits, found as a substring once every digit reads 0 and anything else a
# space (a regex scanned 64 MB/s: 3.6 ms of a 1,000-message batch; this, 20 times that).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _checked_int(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise BadJson(f"integer {text[:40]} is out of range: integers must fit in 64 bits")
    return value


def strict_loads(body: bytes) -> Any:
    """JSON as the databases can hold it: no NaN/Infinity, no lone surrogates, no
    integers past 64 bits, nesting at most 1024 deep. Raises BadJson."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadJson(f"request body is not valid JSON: {exc}") from None
    if _LONG_RUN in body.translate(_DIGITS_AS_ZERO):
        # orjson reads integers past 64 bits as floats, silently changing them; the
        # stdlib parser says which they were (only for bodies with long digit runs).
        json.loads(body, parse_int=_checked_int)
    return value


class StrictJsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        body = request.body
        if len(body) > settings.ARBOR_MAX_BODY_BYTES:
            raise RequestDataTooBig("request body exceeds ARBOR_MAX_BODY_BYTES")
        return strict_loads(body)


# ------------------------------------------------------------------ messages
def _where(loc: Any) -> str:
    parts = [str(p) for p in loc]
    source = parts[0] if parts else "body"
    path = parts[2:] if source == "body" else parts[1:]
    where = ".".join(path) or "request body"
    return where if source == "body" else f"{where} ({source} parameter)"


def validation_detail(errors: list[dict[str, Any]]) -> str:
    """One readable line per problem: `message.role: Input should be 'user', ...`."""
    lines = []
    for error in errors[:10]:
        msg = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
        lines.append(f"{_where(error.get('loc', ()))}: {msg}")
    if len(errors) > 10:
        lines.append(f"and {len(errors) - 10} more problems")
    return "; ".join(lines)


# ------------------------------------------------------------------ handlers
def install(api: NinjaAPI) -> None:
    """Register the handlers on `api`: one table, JSON everywhere."""

    def respond(request: HttpRequest, status: int, body: dict[str, Any]) -> HttpResponse:
        response = api.create_response(request, body, status=status)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="arbor"'
        return response

    def arbor_error(request: HttpRequest, exc: ArborError) -> HttpResponse:
        extra = {"current_leaf_id": getattr(exc, "current_leaf_id", None),
                 **getattr(exc, "located", {})}  # an import's conversation and field
        return respond(request, status_of(exc), error_body(exc.detail, exc.code, **extra))

    def validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return respond(request, 422, error_body(validation_detail(exc.errors), "validation_error"))

    def too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
        limit = settings.ARBOR_MAX_BODY_BYTES
        return respond(request, 413, error_body(
            f"request body is larger than the limit of {limit} bytes", "too_large"))

    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        cause = exc.__cause__
        # ninja wraps every body-parsing failure as a 400; say what it was.
        if isinstance(cause, ArborError):
            return arbor_error(request, cause)
        if isinstance(cause, RequestDataTooBig):
            return too_big(request, cause)
        if isinstance(cause, ValueError | UnicodeDecodeError):
            return respond(request, 422, error_body(
                f"request body is not valid JSON: {cause}", "invalid_json"))
        status = exc.status_code
        return respond(request, status, error_body(str(exc), CODES_BY_STATUS.get(status, "error")))

    def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return respond(request, 401, error_body(
            "missing, unknown or revoked API key: send 'Authorization: Bearer <key>'",
            "unauthorized"))

    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, 404, error_body("not found", "not_found"))

    def database_error(request: HttpRequest, exc: OperationalError) -> HttpResponse:
        if db_pool.no_connection(exc):
            return db_pool.answer(request)  # 503, Retry-After
        return server_error(request, exc)

    def server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
        log.exception("unhandled error in %s %s", request.method, request.path)
        return respond(request, 500, error_body("internal server error", "server_error"))

    api.add_exception_handler(ArborError, arbor_error)
    api.add_exception_handler(ValidationError, validation_error)
    api.add_exception_handler(AuthenticationError, unauthorized)
    api.add_exception_handler(HttpError, http_error)
    api.add_exception_handler(RequestDataTooBig, too_big)
    api.add_exception_handler(Http404, not_found)
    api.add_exception_handler(OperationalError, database_error)
    api.add_exception_handler(Exception, server_error)
