"""The values of a file's top-level JSON array, one at a time (reading.stream): ChatGPT,
Claude and Open WebUI exports run to hundreds of megabytes, and only the value being
read is held, with at most a chunk of the file past it.

The values are read by json's raw_decode (in C) from text decoded as it is read: on a
ChatGPT export it takes 4.4 µs a message where ijson's parser took 7.2, the longest step
of an import after the database's. A value nested deeper than json recurses (LibreChat's
tree form nests two levels a message) is read by ijson, with every value after it.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

import ijson  # type: ignore[import-untyped]

CHUNK = 1 << 20  # bytes read at a time (more while one value runs past them)
_SPACE = re.compile(r"[ \t\n\r]*")
# How close to the end of the text read so far an error may be the text being cut short
# ("\u12" is the longest cut that is not where the text ends).
_CUT = 6


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse)  # (NaN and Infinity are not JSON)


def array_items(file: Any) -> Iterator[Any]:
    """Each value of the JSON array that `file` (binary, read from where it stands)
    holds. Raises ValueError (json.JSONDecodeError, UnicodeDecodeError) or
    ijson.JSONError for text that is not one."""
    text = _Text(file)
    if text.peek() != "[":
        raise json.JSONDecodeError("Expecting '['", text.buf, text.pos)
    text.pos += 1
    if text.peek() == "]":
        text.pos += 1
        text.end()
        return
    while True:
        text.peek()  # (past the white space before it)
        try:
            value = text.value()
        except RecursionError:
            yield from ijson.items(text.rest(), "item", use_float=True)
            return
        yield value
        following = text.peek()
        text.pos += 1
        if following == "]":
            text.end()
            return
        if following != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", text.buf, text.pos - 1)


class _Text:
    """The file's text from `pos` on, decoded as it is read."""

    def __init__(self, file: Any) -> None:
        self.file, self.buf, self.pos, self.eof = file, "", 0, False
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def more(self, at_least: int = CHUNK) -> bool:
        """Read on (dropping the text before `pos`); False at the end of the file."""
        if self.eof:
            return False
        data = self.file.read(max(CHUNK, at_least))
        self.eof = not data
        self.buf = self.buf[self.pos:] + self.decoder.decode(data, final=self.eof)
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), at `pos`."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def value(self) -> Any:
        """The value at `pos`, read on until it is whole (twice the text each time)."""
        # Little left: read on first (a value cut short is parsed again from its start).
        if len(self.buf) - self.pos < CHUNK // 4:
            self.more()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self.buf) - _CUT or exc.msg.startswith("Unterminated")
                if cut and self.more(len(self.buf)):
                    continue
                raise
            if end < len(self.buf) or not self.more():  # (a number may go on past it)
                self.pos = end
                return value

    def end(self) -> None:
        if self.peek():
            raise json.JSONDecodeError("Extra data", self.buf, self.pos)

    def rest(self) -> Any:
        """The array from `pos` on, as a binary file for ijson."""
        pending = self.decoder.getstate()[0]
        return _Joined(b"[" + self.buf[self.pos:].encode() + pending, self.file)


class _Joined:
    """`head`, then the rest of `file`."""

    def __init__(self, head: bytes, file: Any) -> None:
        self.head, self.file = head, file

    def read(self, size: int = -1) -> bytes:
        if self.head and size != 0:  # (ijson reads 0 bytes to tell bytes from text)
            data, self.head = self.head, b""
            return data
        return bytes(self.file.read(size))
