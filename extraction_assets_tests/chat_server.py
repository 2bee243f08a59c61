"""A local OpenAI-compatible ``/v1/chat/completions`` server for the header detector's tests
(not a test module): it answers every request with ``{"header_rows": N}`` (``N`` from
``answer``, given the rows the client sent) and keeps each request body."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from extraction_assets_tests.fault_helpers import JsonHandler, serving


@dataclass
class ChatServer:
    url: str
    answer: Callable[[list[list[str]]], int]
    requests: list[dict] = field(default_factory=list)

    def sent_rows(self) -> list[list[list[str]]]:
        """The rows of each request (the user message's JSON)."""
        return [json.loads(r["messages"][-1]["content"]) for r in self.requests]


class _Handler(JsonHandler):
    state: ChatServer

    def do_POST(self) -> None:
        body = self.json_body()
        self.state.requests.append(body)
        rows = json.loads(body["messages"][-1]["content"])
        content = json.dumps({"header_rows": self.state.answer(rows)})
        self.send_json({
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })


def chat_server(answer: Callable[[list[list[str]]], int]):
    """The server on 127.0.0.1:<free port> (a context manager), shut down on exit."""
    return serving(_Handler, lambda url: ChatServer(url=url, answer=answer))
