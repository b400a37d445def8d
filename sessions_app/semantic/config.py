"""The embedder the settings name: the one place that reads settings.ARBOR_EMBEDDINGS*
(arbor/settings.py fills them from the environment).

ARBOR_EMBEDDINGS: "on" (the default) uses ARBOR_EMBEDDINGS_URL's endpoint when it is set,
else the offline model ARBOR_EMBEDDINGS_LOCAL names ("use+minilm", the default: USE
beside English MiniLM; "use" alone; or "e5", the `e5` extra); "off"
turns search by meaning off; a dotted path names a factory of another Embedder (tests use
one). ARBOR_EMBEDDINGS_MIN_SIMILARITY, when set, is the cosine a message found by meaning
alone needs (default: the model's own, hybrid.py). Read at each call, so
override_settings applies; each distinct configuration is built once per process (the
offline model loads once).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory_core.embedders import LocalE5, LocalUSE, LocalUSEMiniLM, OpenAIEmbeddings
from memory_core.embedding import Embedder

_built: dict[tuple[Any, ...], Embedder] = {}
_lock = threading.Lock()


def _key() -> tuple[Any, ...]:
    return tuple(getattr(settings, name, default) for name, default in (
        ("ARBOR_EMBEDDINGS", "on"), ("ARBOR_EMBEDDINGS_URL", ""),
        ("ARBOR_EMBEDDINGS_MODEL", ""), ("ARBOR_EMBEDDINGS_API_KEY", ""),
        ("ARBOR_EMBEDDINGS_TIMEOUT", 10.0), ("ARBOR_EMBEDDINGS_THREADS", 1),
        ("ARBOR_EMBEDDINGS_MIN_SIMILARITY", None), ("ARBOR_EMBEDDINGS_LOCAL", "use+minilm")))


def embedder() -> Embedder | None:
    """The configured embedder, or None when search by meaning is off."""
    key = _key()
    mode, url, model, api_key, timeout, threads, floor, local = key
    if str(mode).lower() in ("off", "0", "false", "no", ""):
        return None
    with _lock:
        built = _built.get(key)
        if built is None:
            built = _built[key] = _build(mode, url, model, api_key, float(timeout), int(threads),
                                         None if floor is None else float(floor), str(local))
        return built


LOCAL_MODELS = ("use+minilm", "use", "e5")


def _build(mode: str, url: str, model: str, api_key: str, timeout: float,
           threads: int, floor: float | None, local: str) -> Embedder:
    if mode.lower() not in ("on", "1", "true", "yes"):
        module, _, name = mode.rpartition(".")
        factory = getattr(importlib.import_module(module), name)
        made: Embedder = factory()
        return made
    if url:
        return OpenAIEmbeddings(url=url, model=model or "text-embedding-3-small",
                                api_key=api_key, timeout=timeout, floor=floor)
    if local.lower() == "e5":
        return LocalE5(threads=max(1, threads), floor=floor)
    if local.lower() == "use":
        return LocalUSE(floor=floor)
    if local.lower() != "use+minilm":
        raise ImproperlyConfigured(
            f"ARBOR_EMBEDDINGS_LOCAL is {local!r}: name one of {', '.join(LOCAL_MODELS)}")
    return LocalUSEMiniLM(floor=floor)


def describe() -> dict[str, Any]:
    """What the prompt panel and the API say about the embedder: {"enabled", "model"}."""
    current = embedder()
    return {"enabled": current is not None, "model": current.model if current else None}
