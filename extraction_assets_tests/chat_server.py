"""A local OpenAI-compatible ``/v1/chat/completions`` server for the header detector's tests
(not a test module): it answers every request with ``{"header_rows": N}`` (``N`` from
``answer``, given the rows the client sent) and keeps each request body."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ChatServer:
    url: str
    answer: Callable[[list[list[str]]], int]
    requests: list[dict] = field(default_factory=list)

    def sent_rows(self) -> list[list[list[str]]]:
        """The rows of each request (the user message's JSON)."""
        return [json.loads(r["messages"][-1]["content"]) for r in self.requests]


class _Handler(BaseHTTPRequestHandler):
    state: ChatServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.state.requests.append(body)
        rows = json.loads(body["messages"][-1]["content"])
        content = json.dumps({"header_rows": self.state.answer(rows)})
        data = json.dumps({
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def chat_server(answer: Callable[[list[list[str]]], int]) -> Iterator[ChatServer]:
    """The server on 127.0.0.1:<free port>, shut down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    state = ChatServer(url=f"http://127.0.0.1:{server.server_address[1]}/v1", answer=answer)
    server.RequestHandlerClass = type("Bound", (_Handler,), {"state": state})
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
