"""The HTTP plumbing both real LLM clients share: one pooled httpx client, retries with
backoff on 408/409/429/5xx and connection failures (honouring Retry-After), server-sent
events, and errors that carry the status and the provider's message but never the key.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, Unpack

import httpx

from .base import LLMError

if TYPE_CHECKING:
    from types import TracebackType

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_ERROR_CHARS = 500


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(event, data) pairs of a server-sent-events stream; comments and ids skipped."""
    event, data = "", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", list[str]()
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if data:
        yield event or "message", "\n".join(data)


def _retry_after(headers: httpx.Headers) -> float | None:
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def provider_message(response: httpx.Response) -> str:
    """The error text a provider put in its body ({error: {message}} or {error: str})."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:MAX_ERROR_CHARS] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:MAX_ERROR_CHARS]
    if isinstance(error, str):
        return error[:MAX_ERROR_CHARS]
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])[:MAX_ERROR_CHARS]
    return json.dumps(body)[:MAX_ERROR_CHARS]


class HTTPOptions(TypedDict, total=False):
    """Keyword options every HTTP client takes (all optional)."""

    timeout: float
    max_retries: int
    transport: httpx.BaseTransport | None
    backoff: float
    max_backoff: float
    max_tokens: int | None
    extra_body: Mapping[str, Any] | None
    sleep: Callable[[float], None] | None


class HTTPClient:
    """What both HTTP clients share: one pooled connection, retries, safe errors."""

    offline = False
    provider = "LLM"

    def __init__(self, *, base_url: str, api_key: str | None, model: str,
                 **options: Unpack[HTTPOptions]) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.label = f"{self.provider} ({model})"
        self.timeout = timeout = options.get("timeout", 60.0)
        self.max_retries = options.get("max_retries", 3)
        self.backoff = options.get("backoff", 0.5)
        self.max_backoff = options.get("max_backoff", 30.0)
        self.max_tokens = options.get("max_tokens")
        self.extra_body = dict(options.get("extra_body") or {})
        self._api_key = api_key or None
        self._sleep = options.get("sleep") or time.sleep
        transport = options.get("transport")
        self._http = httpx.Client(timeout=httpx.Timeout(timeout), transport=transport)

    def __repr__(self) -> str:  # no key here: reprs end up in logs
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def __enter__(self) -> HTTPClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _request(self, path: str, body: Mapping[str, Any]) -> httpx.Request:
        return self._http.build_request("POST", self.base_url + path, json=body,
                                        headers=self._headers())

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        response = self._send(self._request(path, body), stream=False)
        try:
            data = response.json()
        except ValueError:
            self._fail(f"answered {response.status_code} with a body that is not JSON")
        if not isinstance(data, dict):
            self._fail("answered with JSON that is not an object")
        return data

    def _lines(self, path: str, body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """SSE events of a streamed answer; retries happen only before the first byte."""
        response = self._send(self._request(path, body), stream=True)
        try:
            yield from sse_events(response.iter_lines())
        except httpx.TimeoutException:
            self._fail(f"stream stalled for more than {self.timeout:g}s")
        except httpx.TransportError as exc:
            self._fail(f"stream interrupted ({type(exc).__name__})")
        finally:
            response.close()

    def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        attempt = 0
        while True:
            wait: float | None = None
            try:
                response = self._http.send(request, stream=stream)
            except httpx.TimeoutException:
                error = LLMError(f"{self.label}: no answer within {self.timeout:g}s")
            except httpx.TransportError as exc:
                reason = self._scrub(str(exc)) or type(exc).__name__
                error = LLMError(f"{self.label}: cannot reach {self.base_url} ({reason})")
            else:
                if response.status_code < 400:
                    return response
                response.read()
                response.close()
                status = response.status_code
                error = LLMError(f"{self.label}: HTTP {status}: "
                                 f"{self._scrub(provider_message(response))}", status=status)
                if status not in RETRY_STATUSES and status < 500:
                    raise error
                wait = _retry_after(response.headers)
            if attempt >= self.max_retries:
                if not attempt:
                    raise error
                raise LLMError(f"{error.detail} (gave up after {attempt + 1} attempts)",
                               status=error.status)
            self._sleep(min(wait if wait is not None else self.backoff * 2**attempt,
                            self.max_backoff))
            attempt += 1

    def _fail(self, what: str) -> NoReturn:
        raise LLMError(f"{self.label}: {what}")
