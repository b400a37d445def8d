"""SPEC §13 over HTTP: every bad input is a JSON {detail, code} error and changes nothing.

Includes the inputs that turn into 500s on a naive stack: NaN/Infinity, lone surrogates,
NUL on Postgres, integers past 64 bits, deeply nested parts.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection

from memory_core import Session

from .conftest import append, error, ok, stored_state, user_msg


def post_raw(api, session_id, raw: bytes):
    return api.post(f"/sessions/{session_id}/messages", raw_body=raw)


@pytest.mark.parametrize("raw", [
    b'{"message": {"role": "user", "parts": [',
    b"not json at all",
    b'{"message": {"role": "user", "parts": []},}',
    b"\xff\xfe\x00",
])
def test_malformed_json_is_422_not_400(api, session_id, raw):
    before = stored_state(session_id)
    body = error(post_raw(api, session_id, raw), 422, "invalid_json")
    assert "JSON" in body["detail"]
    assert stored_state(session_id) == before


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_nan_and_infinity_are_refused(api, session_id, number):
    before = stored_state(session_id)
    raw = b'{"message": {"role": "user", "parts": [{"type": "text", "text": "x"}], ' \
          b'"metadata": {"score": ' + number + b"}}}"
    error(post_raw(api, session_id, raw), 422, "invalid_json")
    usage = b'{"input_tokens": 1, "output_tokens": 1, "cost": ' + number + b"}"
    error(api.post(f"/sessions/{session_id}/usage", raw_body=usage), 422, "invalid_json")
    assert stored_state(session_id) == before


@pytest.mark.parametrize("text", [b'"\\ud800"', b'"a\\udc00b"', b'"\xed\xa0\x80"'])
def test_lone_surrogates_are_refused(api, session_id, text):
    before = stored_state(session_id)
    raw = b'{"message": {"role": "user", "parts": [{"type": "text", "text": ' + text + b"}]}}"
    error(post_raw(api, session_id, raw), 422, "invalid_json")
    error(api.put(f"/sessions/{session_id}/context/notes", raw_body=b'{"content": ' + text + b"}"),
          422, "invalid_json")
    assert stored_state(session_id) == before


def test_nul_in_text_is_stored_and_read_back(api, session_id, vendor):
    # Postgres text columns cannot hold NUL; the parts are JSON text, where it is escaped.
    stored = append(api, session_id, user_msg("deploy plan\u0000"))
    assert stored["parts"][0]["text"] == "deploy plan\u0000"
    history = ok(api.get(f"/sessions/{session_id}/history"))
    assert history["messages"][0]["parts"][0]["text"] == "deploy plan\u0000"
    assert ok(api.get(f"/sessions/{session_id}/search", q="deploy"))["items"]
    assert ok(api.get(f"/sessions/{session_id}/search", q="\u0000"))["items"] == []


def test_nul_elsewhere_never_reaches_the_database(api, agent_id, session_id):
    before = stored_state(session_id)
    error(api.post(f"/sessions/{session_id}/messages",
                   {"message": user_msg("x", id="bad\u0000id")}), 422, "validation_error")
    error(api.post(f"/sessions/{session_id}/messages",
                   {"message": user_msg("x"), "parent_id": "\u0000"}), 422, "validation_error")
    error(api.get(f"/sessions/{session_id}/history", leaf_id="a\u0000"), 422)
    error(api.post("/agents", {"name": "evil\u0000"}), 422, "validation_error")
    error(api.post("/agents", {"name": "ok", "context": [
        {"label": "soul", "kind": "readonly", "content": "nul\u0000here"}]}), 422)
    error(api.get(f"/sessions/{session_id}/messages/a%00b"), 404, "not_found")
    error(api.get("/sessions/%00"), 404, "not_found")
    error(api.patch(f"/sessions/{session_id}", {"name": "na\u0000me"}), 422)
    assert stored_state(session_id) == before
    ok(api.get(f"/agents/{agent_id}/search", q="x\u0000y"))


@pytest.mark.parametrize("number", [b"18446744073709551616", b"-9223372036854775809",
                                    b"123456789012345678901234567890"])
def test_integers_past_64_bits_are_refused(api, session_id, number):
    before = stored_state(session_id)
    raw = b'{"message": {"role": "user", "parts": [{"type": "text", "text": "x"}], ' \
          b'"metadata": {"n": ' + number + b"}}}"
    body = error(post_raw(api, session_id, raw), 422, "invalid_json")
    assert "64 bits" in body["detail"]
    usage = b'{"input_tokens": ' + number + b', "output_tokens": 0, "cost": 0}'
    error(api.post(f"/sessions/{session_id}/usage", raw_body=usage), 422)
    error(api.get(f"/sessions/{session_id}/search", q="x", limit=number.decode()), 422)
    assert stored_state(session_id) == before


def test_64_bit_integers_and_long_digit_strings_are_fine(api, session_id):
    metadata = {"big": 2**64 - 1, "small": -(2**63), "digits": "1" * 40}
    stored = append(api, session_id, user_msg("x", metadata=metadata))
    assert stored["metadata"] == metadata


def test_usage_counters_refuse_what_they_cannot_add(api, session_id):
    before = stored_state(session_id)
    error(api.post(f"/sessions/{session_id}/usage",
                   {"input_tokens": 2**60, "output_tokens": 0, "cost": 0}), 422)
    error(api.post(f"/sessions/{session_id}/usage",
                   {"input_tokens": -1, "output_tokens": 0, "cost": 0}), 422)
    assert stored_state(session_id) == before


def _nested(depth: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(depth):
        value = {"inner": value}
    return value


@pytest.mark.parametrize("depth", [300, 1100, 100_000])
def test_deeply_nested_parts_are_refused(api, session_id, depth):
    before = stored_state(session_id)
    if depth < 1000:
        raw = json.dumps({"message": {"role": "user", "parts": [
            {"type": "data-x", "data": _nested(depth)}]}}).encode()
    else:  # past what any encoder will write: build the text by hand
        raw = (b'{"message": {"role": "user", "parts": [{"type": "data-x", "data": '
               + b'{"a": ' * depth + b"1" + b"}" * depth + b"}]}}")
    error(post_raw(api, session_id, raw), 422)
    assert stored_state(session_id) == before


def test_moderately_nested_parts_round_trip(api, session_id):
    parts = [{"type": "data-x", "data": _nested(100)}]
    stored = append(api, session_id, {"role": "user", "parts": parts})
    assert ok(api.get(f"/sessions/{session_id}/messages/{stored['id']}"))["parts"] == parts


@pytest.mark.parametrize(("body", "field"), [
    ({}, "message"),
    ({"message": {"parts": []}}, "message.role"),
    ({"message": {"role": "robot", "parts": []}}, "message.role"),
    ({"message": {"role": "user"}}, "message: give parts (a list) or content"),
    ({"message": {"role": "user", "parts": "hello"}}, "message.parts"),
    ({"message": {"role": "user", "parts": [{"text": "no type"}]}}, "message.parts"),
    ({"message": {"role": "user", "parts": [], "metadata": []}}, "message.metadata"),
    ({"message": {"role": 7, "parts": []}}, "message.role"),
    ({"message": {"role": "user", "parts": []}, "parent": "typo"}, "parent"),
    ({"message": {"role": "user", "parts": []}, "parent_id": 12}, "parent_id"),
    ([1, 2], "request body"),
])
def test_wrong_shapes_name_the_field(api, session_id, body, field):
    before = stored_state(session_id)
    detail = error(api.post(f"/sessions/{session_id}/messages", body), 422,
                   "validation_error")["detail"]
    assert detail.startswith(field), detail
    assert stored_state(session_id) == before


def test_empty_body_is_422(api, session_id):
    error(api.post(f"/sessions/{session_id}/messages", raw_body=b""), 422, "validation_error")


def test_bad_query_parameters_are_422(api, session_id, agent_id):
    detail = error(api.get(f"/sessions/{session_id}/search", q="x", limit="many"), 422)["detail"]
    assert "limit" in detail and "query" in detail
    error(api.get(f"/sessions/{session_id}/search", q="x", limit=0), 422)
    error(api.get(f"/agents/{agent_id}/sessions", cursor="garbage"), 422, "invalid_cursor")
    error(api.get(f"/sessions/{session_id}/tools", format="xml"), 422)


def test_oversized_body_is_413(api, session_id, settings):
    settings.ARBOR_MAX_BODY_BYTES = 1000
    before = stored_state(session_id)
    big = user_msg("x" * 2000)
    body = error(api.post(f"/sessions/{session_id}/messages", {"message": big}), 413, "too_large")
    assert "1000" in body["detail"]
    # Django's own guard (a larger DATA_UPLOAD_MAX_MEMORY_SIZE would be the first to trip)
    settings.ARBOR_MAX_BODY_BYTES = 10**6
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 500
    error(api.post(f"/sessions/{session_id}/messages", {"message": big}), 413, "too_large")
    assert stored_state(session_id) == before


def test_unmatched_urls_and_methods_answer_json(api, session_id, anonymous):
    error(api.get("/nothing/here"), 404, "not_found")
    error(api.post("/nothing/here", {"a": 1}), 404, "not_found")
    error(api.get("/api/v2/agents"), 404, "not_found")
    error(api.get("/api/"), 404, "not_found")
    error(anonymous.get("/api/nothing"), 404, "not_found")
    error(api.get(f"/sessions/{session_id}/"), 404, "not_found")  # no slash redirects
    response = api.put(f"/sessions/{session_id}", {"name": "x"})
    error(response, 405, "method_not_allowed")
    assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "PATCH", "DELETE"}
    error(api.delete("/agents"), 405, "method_not_allowed")


def test_unexpected_failures_are_json_500_and_logged(api, session_id, monkeypatch, caplog):
    def broken(self):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Session, "get_tree", broken)
    with caplog.at_level(logging.ERROR, logger="sessions_app.api"):
        body = error(api.get(f"/sessions/{session_id}/tree"), 500, "server_error")
    assert "fire" not in body["detail"]  # no internals leak
    assert any("disk on fire" in (r.exc_text or "") or r.exc_info for r in caplog.records)


@pytest.mark.postgres_only
def test_nul_in_every_text_field_on_postgres(api, agent_id, session_id):
    assert connection.vendor == "postgresql"
    tool = append(api, session_id, {"role": "tool", "metadata": {"k\u0000": "v\u0000"}, "parts": [
        {"type": "tool-result", "toolCallId": "c\u0000", "output": "o\u0000"}]})
    assert tool["metadata"] == {"k\u0000": "v\u0000"}
    ok(api.post(f"/sessions/{session_id}/context", {"label": "notes"}), 201)
    ok(api.post(f"/sessions/{session_id}/context", {"label": "kb", "kind": "search"}), 201)
    ok(api.put(f"/sessions/{session_id}/context/notes", {"content": "a\u0000b"}))
    assert ok(api.get(f"/sessions/{session_id}/context/notes"))["content"] == "ab"
    ok(api.post(f"/sessions/{session_id}/context/notes/append", {"content": "c\u0000"}))
    ok(api.put(f"/sessions/{session_id}/context/kb/entries/k1", {"content": "x\u0000y"}))
    ok(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "s\u0000", "from_message_id": tool["id"], "to_message_id": tool["id"]}), 201)
    ok(api.post(f"/sessions/{session_id}/tools/set_context",
                {"arguments": {"label": "notes", "content": "t\u0000"}}))
    ok(api.post(f"/sessions/{session_id}/compact-and-split", {"summary": "x\u0000"}), 201)
    ok(api.get(f"/sessions/{session_id}/export"))


@pytest.mark.parametrize("body", [b"[99999999999999999999]", b"[1, 99999999999999999999]",
                                  b'{"a": 123456789012345678901}'])
def test_a_long_integer_is_found_wherever_it_stands(body):
    from sessions_app.api.errors import BadJson, strict_loads

    with pytest.raises(BadJson):
        strict_loads(body)
    assert strict_loads(b"[123456789012345678, 1.5e300]") == [123456789012345678, 1.5e300]
