"""The SDK's tests were fetched (conftest.py); on CI a missing download is a failure."""

from __future__ import annotations

import os

import pytest

from tests.agents_sdk.conftest import FETCH_PROBLEM, FILES, UPSTREAM


def test_the_sdk_tests_were_fetched():
    if FETCH_PROBLEM:
        if os.environ.get("CI"):
            pytest.fail(FETCH_PROBLEM)
        pytest.skip(FETCH_PROBLEM)
    names = sorted(p.name for p in UPSTREAM.glob("test_*.py"))
    assert names == sorted(n for n in FILES if n.startswith("test_"))
