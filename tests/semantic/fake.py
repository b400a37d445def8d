"""A cheap, deterministic stand-in for an embedding model, and an OpenAI-compatible
`/v1/embeddings` server on loopback that answers with it (real HTTP).

FakeEmbedder hashes words into 64 dimensions, with a few words sharing a concept
("car", "skoda", "auto"), so a test can tell search by meaning from search by words
without paying for the real model."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 64
CONCEPTS = {"car": "vehicle", "skoda": "vehicle", "auto": "vehicle", "drive": "vehicle",
            "brother": "family", "tom": "family", "dessert": "sweet", "tiramisu": "sweet"}
_WORD = re.compile(r"\w+")


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    out = np.zeros(dim, np.float32)
    for word in _WORD.findall(text.lower()):
        word = CONCEPTS.get(word, word)
        out[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = float(np.linalg.norm(out))
    return (out / norm if norm else out).tolist()


class FakeEmbedder:
    model = "fake-hash-64"
    dim: int | None = DIM

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    def embed_query(self, text: str) -> Any:
        from memory_core.embedding import EmbedderUnavailable

        if self.fail:
            raise EmbedderUnavailable("fake embedder is down")
        return np.asarray(fake_vector(text), np.float32)

    def embed_passages(self, texts: Sequence[str]) -> list[Any]:
        from memory_core.embedding import EmbedderUnavailable

        self.calls += 1
        if self.fail:
            raise EmbedderUnavailable("fake embedder is down")
        return [np.asarray(fake_vector(t), np.float32) for t in texts]


SHARED = FakeEmbedder()


def shared() -> FakeEmbedder:
    """The factory ARBOR_EMBEDDINGS names in tests: one instance, so a test can fail it."""
    return SHARED


class FakeServer:
    """What the handler does: `status` to answer, `delay` seconds to wait, `dim`."""

    def __init__(self) -> None:
        self.status = 200
        self.delay = 0.0
        self.dim = DIM
        self.requests: list[dict[str, Any]] = []
        self.url = ""


@contextmanager
def embeddings_server() -> Iterator[FakeServer]:
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "body": body,
                                   "auth": self.headers.get("Authorization")})
            if state.delay:
                time.sleep(state.delay)
            if self.path != "/v1/embeddings" or state.status != 200:
                self._send(state.status if state.status != 200 else 404, {"error": "no"})
                return
            data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, state.dim)}
                    for i, t in enumerate(body["input"])]
            self._send(200, {"object": "list", "model": body["model"],
                             "data": list(reversed(data))})  # any order: index tells

        def _send(self, status: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that timed out and left: expected in these tests

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
