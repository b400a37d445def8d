"""Python clients for Arbor's JSON API, importable without Django (only httpx is needed):
`ArborClient` / `AsyncArborClient` (client.py) and, for the OpenAI Agents SDK,
`arbor_client.agents_session.ArborSession` (and `AsyncArborSession`)."""

from __future__ import annotations

from .client import ArborAPIError, ArborClient, AsyncArborClient

__all__ = ["ArborAPIError", "ArborClient", "AsyncArborClient"]
