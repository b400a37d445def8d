"""The OpenAI-compatible embeddings client against a fake endpoint on loopback."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.embedders import HTTP_BATCH, OpenAIEmbeddings
from memory_core.embedding import EmbedderUnavailable, WrongDimension, unit
from tests.semantic.fake import DIM, embeddings_server, fake_vector


def test_passages_come_back_in_order_as_unit_vectors_in_batches():
    texts = [f"message number {i}" for i in range(HTTP_BATCH + 3)]
    with embeddings_server() as server:
        client = OpenAIEmbeddings(url=server.url, model="m1", api_key="sk-test")
        out = client.embed_passages(texts)
    assert len(out) == len(texts)
    assert [r["path"] for r in server.requests] == ["/v1/embeddings"] * 2
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert server.requests[0]["body"]["model"] == "m1"
    assert np.allclose(out[5], fake_vector(texts[5]), atol=1e-6)
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-5 for v in out)
    assert client.dim == DIM


def test_full_embeddings_url_is_used_as_given():
    with embeddings_server() as server:
        client = OpenAIEmbeddings(url=server.url + "/embeddings", model="m1")
        client.embed_query("where is it")
    assert server.requests[0]["path"] == "/v1/embeddings"
    assert server.requests[0]["auth"] is None


def test_error_status_is_unavailable():
    with embeddings_server() as server:
        server.status = 503
        client = OpenAIEmbeddings(url=server.url, model="m1")
        with pytest.raises(EmbedderUnavailable, match="503"):
            client.embed_passages(["a"])


def test_slow_endpoint_times_out_as_unavailable():
    with embeddings_server() as server:
        server.delay = 0.5
        client = OpenAIEmbeddings(url=server.url, model="m1", timeout=0.1)
        with pytest.raises(EmbedderUnavailable):
            client.embed_query("anything")


def test_unreachable_endpoint_is_unavailable():
    client = OpenAIEmbeddings(url="http://127.0.0.1:9/v1", model="m1", timeout=0.5)
    with pytest.raises(EmbedderUnavailable):
        client.embed_passages(["a"])


def test_vectors_of_another_size_than_before_are_refused():
    with embeddings_server() as server:
        client = OpenAIEmbeddings(url=server.url, model="m1")
        client.embed_query("first")
        server.dim = DIM * 2
        with pytest.raises(WrongDimension):
            client.embed_passages(["second"])


def test_unit_refuses_wrong_shapes_and_keeps_zero_rows():
    with pytest.raises(WrongDimension):
        unit([[1.0, 2.0]], dim=3, count=1)
    with pytest.raises(WrongDimension):
        unit([[1.0, 2.0]], dim=2, count=2)
    with pytest.raises(WrongDimension):
        unit([[float("nan"), 1.0]], dim=2, count=1)
    zero, one = unit([[0.0, 0.0], [3.0, 4.0]], dim=2, count=2)
    assert zero.tolist() == [0.0, 0.0]
    assert np.allclose(one, [0.6, 0.8])
