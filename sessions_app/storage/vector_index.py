"""An agent's vectors as one float32 matrix in memory, ranked by a scan (exact below
PREFILTER_FROM vectors, see below).

Neither database here can load a vector extension (this Python's sqlite3 has no
enable_load_extension, so sqlite-vec cannot load; pgvector is not installed), and an
exact scan of one agent's vectors is a single matrix-vector product: about 10 ms for
100,000 vectors of 384 dimensions on one core. The matrix is kept per (agent, model) and
checked at each search by one read of two keys (the highest id, and the agent's count of
deleted vectors, kept by a trigger): rows past the highest id are appended; a delete (of
a message, or of an edited message's vector) reads the agent's vectors again. At most MAX_CACHED_ROWS vectors are kept across agents (the
least recently searched go first).

A large agent's scan is two steps (Charikar's sign hashing, as "binary quantisation with
rescoring" in vector databases): each vector, less the agent's mean vector, is also kept as
its signs (48 bytes at 384 dimensions, a 32nd of the float rows); the rows whose signs differ
least from the question's (Hamming distance, about the angle between them) are then scored
exactly. The float matrix is read for those rows only, where the whole scan was bound by
memory bandwidth (150 MB per 100,000 vectors). Below PREFILTER_FROM vectors every row is
scored exactly.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_core.embedding import Vector, WrongDimension

from . import vectors

MAX_CACHED_ROWS = 400_000  # ~600 MB of float32 at 384 dimensions
PREFILTER_FROM = 20_000  # vectors of an agent (scope) from which signs pick the rows scored
# Rows scored exactly after the sign step: this share of the rows in scope, at least
# RESCORE_MIN and RESCORE_FACTOR per hit asked for. Measured on 5,073 real sentences
# embedded by the local model, with the recall set's 240 questions: from the nearest 5%
# by signs, the exact best hit was kept for all of them, 96% of the exact top 5, and the
# top 20's cosines fell by 0.0007 on average (the rows swapped are near-ties); from 2%,
# 91% of the top 5 (tests/semantic/test_vector_prefilter.py).
RESCORE_SHARE = 0.05
RESCORE_FACTOR = 50
RESCORE_MIN = 2_000
OUT_OF_SCOPE = np.iinfo(np.uint16).max  # a distance no code reaches (dim < 65,535)


def _one_blas_thread() -> None:
    """The scan on one core: numpy's OpenBLAS otherwise splits each product over every
    core and spins waiting for them, which on a busy server (requests, the embedding
    worker, other processes) made an agent-wide scan of 100,000 vectors 2-4 times slower
    than on one core (~5 ms). OPENBLAS_NUM_THREADS, when set, is left to rule."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")):
        with contextlib.suppress(OSError):
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "openblas_set_num_threads64_", "openblas_set_num_threads"):
                setter = getattr(lib, name, None)
                if setter is not None:
                    setter(1)
                    return


_one_blas_thread()


@dataclass
class AgentVectors:
    """The vectors of one agent by one model: `rows` counts the stored rows (those
    without text too), `top` their highest id; the first `size` rows of the arrays hold
    the vectors."""

    rows: int = 0
    top: int = 0
    deleted: int = 0  # the agent's deleted vectors when read: another number means reload
    size: int = 0
    dim: int = 0
    seqs: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    sessions: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    matrix: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, 0), np.float32))
    # The sign codes of the first `coded` rows (made at the first scan that wants them),
    # taken about `center`, the mean of the rows there were then.
    coded: int = 0
    center: npt.NDArray[np.float32] | None = None
    codes: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros((0, 0), np.uint64))

    def add(self, stored: Sequence[tuple[int, int, int, int, float, bytes]]) -> None:
        """Append rows as rows_after reads them."""
        kept = [r for r in stored if r[3] > 0]
        if kept:
            self.dim = self.dim or kept[0][3]
            end = self.size + len(kept)
            if end > len(self.seqs):  # grow by doubling: appends stay cheap on average
                capacity = max(end, 2 * len(self.seqs), 1024)
                self.seqs = _grown(self.seqs, capacity)
                self.sessions = _grown(self.sessions, capacity)
                matrix = np.zeros((capacity, self.dim), np.float32)
                if self.size:
                    matrix[:self.size] = self.matrix[:self.size]
                self.matrix = matrix
            codes = np.frombuffer(b"".join(r[5] for r in kept), np.int8).reshape(-1, self.dim)
            scales = np.array([r[4] for r in kept], np.float32)[:, None]
            self.matrix[self.size:end] = codes.astype(np.float32) * scales
            self.seqs[self.size:end] = [r[1] for r in kept]
            self.sessions[self.size:end] = [r[2] for r in kept]
            self.size = end
        self.rows += len(stored)
        if stored:
            self.top = stored[-1][0]


def _grown(array: npt.NDArray[np.int64], capacity: int) -> npt.NDArray[np.int64]:
    out = np.zeros(capacity, np.int64)
    out[:len(array)] = array
    return out


def _signs(rows: npt.NDArray[np.float32], center: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
    """Each row's signs about `center` as bits packed into 64-bit words (zero-padded), one
    row of the result per word: a word of every vector lies together, so the distance is
    a few passes over contiguous memory."""
    bits = np.packbits(rows > center, axis=-1)
    pad = (-bits.shape[-1]) % 8
    if pad:
        bits = np.pad(bits, [(0, 0), (0, pad)])
    return np.ascontiguousarray(np.ascontiguousarray(bits).view(np.uint64).T)


def _coded(found: AgentVectors) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint64]]:
    """(center, codes of the first `size` rows): made for the rows not coded yet. Called
    under _lock."""
    size = found.size
    if found.center is None:
        found.center = found.matrix[:size].mean(axis=0).astype(np.float32)
    if found.coded < size:
        fresh = _signs(found.matrix[found.coded:size], found.center)
        if found.codes.shape[1] < len(found.matrix):  # the matrix grew: as many columns
            codes = np.zeros((len(fresh), len(found.matrix)), np.uint64)
            if found.coded:
                codes[:, :found.coded] = found.codes[:, :found.coded]
            found.codes = codes
        found.codes[:, found.coded:size] = fresh
        found.coded = size
    return found.center, found.codes


def _distance(codes: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64],
              size: int) -> npt.NDArray[np.uint16]:
    """Hamming distance of the first `size` codes to the query's."""
    out = np.bitwise_count(codes[0, :size] ^ query[0, 0]).astype(np.uint16)
    for word in range(1, len(codes)):
        out += np.bitwise_count(codes[word, :size] ^ query[word, 0])
    return out


_cache: OrderedDict[tuple[str, str], AgentVectors] = OrderedDict()
_lock = threading.Lock()


def agent_vectors(cur: Any, *, agent_id: str, model: str,
                  state: tuple[int, int] | None = None) -> AgentVectors:
    """The agent's vectors by `model`, as stored now (one two-key read when cached);
    `state`: vectors.state's first two, when the caller read them."""
    top, deleted = state or vectors.state(cur, agent_id=agent_id, model=model)[:2]
    key = (agent_id, model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            if cached.top == top and cached.deleted == deleted:
                return cached
    if cached is not None and cached.deleted == deleted and top > cached.top:
        fresh = vectors.rows_after(cur, agent_id=agent_id, model=model, after=cached.top)
        with _lock:
            cached.add([r for r in fresh if r[0] > cached.top])
        return cached
    whole = AgentVectors(deleted=deleted)
    whole.add(vectors.rows_after(cur, agent_id=agent_id, model=model, after=0))
    with _lock:
        _cache[key] = whole
        _evict()
    return whole


def held(agent_id: str, model: str) -> bool:
    """Whether vectors of the agent by `model` are in memory (as last read)."""
    with _lock:
        cached = _cache.get((agent_id, model))
        return cached is not None and cached.size > 0


def _evict() -> None:
    total = sum(v.size for v in _cache.values())
    while total > MAX_CACHED_ROWS and len(_cache) > 1:
        _, dropped = _cache.popitem(last=False)
        total -= dropped.size


def forget() -> None:
    """Empty the cache (tests; a flush)."""
    with _lock:
        _cache.clear()


def nearest(found: AgentVectors, query: Vector, *, limit: int,
            session_key: int | None = None, exclude_key: int | None = None,
            only_seqs: Sequence[int] | None = None) -> list[tuple[int, float]]:
    """(message seq, cosine) of the `limit` vectors nearest `query`, best first, within
    one session, all but one, or the messages `only_seqs` (a path). Raises WrongDimension
    when the query's size is not the vectors'."""
    with _lock:  # a consistent view: rows appended later are past `size`
        size, matrix, seqs, sessions = found.size, found.matrix, found.seqs, found.sessions
        if size == 0 or limit <= 0:
            return []
        if query.size != found.dim:
            raise WrongDimension(
                f"the query vector has {query.size} dimensions, the stored vectors {found.dim}")
        signs = _coded(found) if size >= PREFILTER_FROM else None
    keep = _kept(seqs[:size], sessions[:size], session_key=session_key,
                 exclude_key=exclude_key, only_seqs=only_seqs)
    in_scope = size if keep is None else int(keep.sum())
    rescored = max(RESCORE_MIN, limit * RESCORE_FACTOR, int(in_scope * RESCORE_SHARE))
    if signs is not None and in_scope >= PREFILTER_FROM and rescored < in_scope:
        center, codes = signs
        distance = _distance(codes, _signs(query[None, :], center), size)
        if keep is not None:
            distance[~keep] = OUT_OF_SCOPE
        rows = np.argpartition(distance, rescored - 1)[:rescored]
        rows = rows[distance[rows] < OUT_OF_SCOPE]
        rows.sort()  # memory order: the float rows are read forwards
        return _best(matrix[rows] @ query, seqs[rows], limit)
    scores = matrix[:size] @ query
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    return _best(scores, seqs[:size], limit)


def _kept(seqs: npt.NDArray[np.int64], sessions: npt.NDArray[np.int64], *,
          session_key: int | None, exclude_key: int | None,
          only_seqs: Sequence[int] | None) -> npt.NDArray[np.bool_] | None:
    """The rows in scope (None: all of them)."""
    keep: npt.NDArray[np.bool_] | None = None
    if session_key is not None:
        keep = sessions == session_key
    if exclude_key is not None:
        keep = (sessions != exclude_key) if keep is None else keep & (sessions != exclude_key)
    if only_seqs is not None:
        wanted = np.isin(seqs, np.asarray(only_seqs, np.int64))
        keep = wanted if keep is None else keep & wanted
    return keep


def _best(scores: npt.NDArray[np.float32], seqs: npt.NDArray[np.int64],
          limit: int) -> list[tuple[int, float]]:
    """(seq, score) of the `limit` best scores, best first; ties by position."""
    count = min(limit, len(scores))
    if count <= 0:
        return []
    best = np.argpartition(-scores, count - 1)[:count]
    best = best[np.lexsort((best, -scores[best]))]
    return [(int(seqs[i]), float(scores[i])) for i in best if np.isfinite(scores[i])]
