"""memory_core.imports.items: a top-level JSON array read a value at a time gives what a
whole-file parser gives, wherever the chunks are cut, and refuses what is not JSON."""

from __future__ import annotations

import io
import json

import ijson
import orjson
import pytest

from memory_core.imports import items
from tests.imports import exports as ex

FILES = [
    orjson.dumps(ex.chatgpt()), orjson.dumps(ex.claude()), orjson.dumps(ex.openwebui()),
    json.dumps(ex.chatgpt(), indent=2).encode(),
    b' [ 1 , 23456789 , -1.5e3, "a\\u00e9\\ud83d\\ude00 \xc3\xa9 \xf0\x9f\x98\x80", true, '
    b'false, null, [], {}, [[1,[2]]] ] \n',
    b"[]", b" [ ] ", b"[12345]\n\n",
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, items.CHUNK])
def test_values_are_those_of_the_whole_array_wherever_chunks_end(monkeypatch, chunk):
    monkeypatch.setattr(items, "CHUNK", chunk)
    for body in FILES:
        assert list(items.array_items(io.BytesIO(body))) == orjson.loads(body)


@pytest.mark.parametrize("chunk", [1, 3, items.CHUNK])
@pytest.mark.parametrize("body", [
    b"[1,]", b"[1 2]", b"[NaN]", b"[-Infinity]", b'[{"a":1}', b'[{"a":1}] x', b'[{"a" 1}]',
    b'["\xff"]', b'["abc', b"[1,", b"[tru]", b'["a\tb"]', b"[", b"[,1]",
])
def test_what_is_not_json_is_refused(monkeypatch, chunk, body):
    monkeypatch.setattr(items, "CHUNK", chunk)
    with pytest.raises((ValueError, ijson.JSONError)):
        list(items.array_items(io.BytesIO(body)))


@pytest.mark.parametrize("chunk", [3, items.CHUNK])
def test_a_value_nested_past_the_json_module_is_read_with_those_after_it(monkeypatch, chunk):
    monkeypatch.setattr(items, "CHUNK", chunk)
    body = b'[{"a": 1}, ' + b"[" * 5000 + b"]" * 5000 + b', {"b": 2}, "\xc3\xa9"]'
    values = list(items.array_items(io.BytesIO(body)))
    assert len(values) == 4 and values[0] == {"a": 1} and values[2:] == [{"b": 2}, "é"]
