"""Numeric limits defined once; the API schemas build on them."""

from __future__ import annotations

# Session token totals stay JSON-safe integers (exact in a double, so in every client).
MAX_TOKEN_TOTAL = 2**53 - 1
# A session's estimated cost, in the caller's currency unit.
MAX_COST = 1e12
