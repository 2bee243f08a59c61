"""Helpers of the concurrency and crash-safety tests (not a test module).

* :func:`write_batch` builds the B37/B38 batch of small workbooks;
* :func:`fake_embedding_server` serves an OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1
  (deterministic vectors, optionally held until released) so a large ingest embeds quickly;
* run as a script, it is one ingest worker process::

      python fault_helpers.py --data-dir D [--force] [--base-url URL] FILE...

  which calls :func:`extraction_assets.app.ingest.ingest_paths` and prints the results as one JSON
  list on its last stdout line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import numpy as np

HEADER = ("Batch file", "Row", "Value")
T = TypeVar("T")


def batch_value(k: int, r: int) -> int:
    """Value of row ``r`` (1-based) of batch file ``k``."""
    return (k * 37 + r * 11) % 1000


def write_batch(folder: Path, n_files: int = 16, n_rows: int = 20) -> list[Path]:
    """``wb_00.xlsx`` ... : sheet ``Data``, header ``Batch file | Row | Value``, ``n_rows`` rows."""
    import openpyxl

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(n_files):
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = "Data"
        ws.append(list(HEADER))
        for r in range(1, n_rows + 1):
            ws.append([f"wb_{k:02d}", r, batch_value(k, r)])
        path = folder / f"wb_{k:02d}.xlsx"
        wb.save(path)
        paths.append(path)
    return paths


# -- a fake OpenAI-compatible embeddings server ------------------------------------------------


@dataclass
class FakeServer:
    url: str
    dimension: int = 8
    requests: int = 0
    #: cleared: requests wait (up to 120 s) until it is set again
    open: threading.Event = field(default_factory=threading.Event)
    #: set when a request arrived while ``open`` was cleared
    held: threading.Event = field(default_factory=threading.Event)


def _vector(text: str, dim: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler of the local test servers: quiet, JSON in and out; ``state`` is the
    server's state (bound by :func:`serving`)."""

    state: object

    def log_message(self, format: str, *args: object) -> None:
        pass

    def json_body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def send_json(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serving(handler: type[JsonHandler], state_for: Callable[[str], T]) -> Iterator[T]:
    """Serve ``handler`` on 127.0.0.1:<free port> in a thread, its ``state`` made by
    ``state_for(base_url)`` (``http://127.0.0.1:<port>/v1``); shut down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    state = state_for(f"http://127.0.0.1:{server.server_address[1]}/v1")
    server.RequestHandlerClass = type("Bound", (handler,), {"state": state})
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _Handler(JsonHandler):
    state: FakeServer

    def do_POST(self) -> None:
        body = self.json_body()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.state.requests += 1
        if not self.state.open.is_set():
            self.state.held.set()
            self.state.open.wait(120)
        dim = int(body.get("dimensions") or self.state.dimension)
        payload = {
            "object": "list", "model": body.get("model"),
            "data": [{"object": "embedding", "index": i, "embedding": _vector(t, dim)}
                     for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
        try:
            self.send_json(payload)
        except OSError:  # the client was killed while we waited
            pass


@contextmanager
def fake_embedding_server() -> Iterator[FakeServer]:
    """An OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1:<free port>, shut down on
    exit (held requests are released first)."""
    def opened(url: str) -> FakeServer:
        state = FakeServer(url=url)
        state.open.set()
        return state

    with serving(_Handler, opened) as state:
        try:
            yield state
        finally:
            state.open.set()  # release held requests before the server shuts down


# -- the ingest worker -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--base-url", help="embed with the openai provider at this server "
                                           "(default: the local embedder)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    from extraction_assets.app.ingest import ingest_paths
    from extraction_assets.defs.resources import EmbedderResource

    embedder = None
    if args.base_url:
        embedder = EmbedderResource(provider="openai", model="fake-embed", base_url=args.base_url,
                                    api_key_env="")
    results = ingest_paths(args.files, args.data_dir, embedder=embedder, force=args.force)
    print(json.dumps([{"path": r.path, "workbook_hash": r.workbook_hash, "status": r.status,
                       "error": r.error, "counts": r.counts} for r in results]), flush=True)
    return 0 if all(r.status in ("success", "unchanged") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
