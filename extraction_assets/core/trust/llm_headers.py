"""A :class:`~.headers.HeaderDetector` that asks an OpenAI-compatible chat model (OpenAI, Azure
OpenAI, vLLM, Ollama...) through the official ``openai`` client, the client the embedder uses.

Only the first rows of an ambiguous table are sent (see :mod:`.headers`), as a JSON list of
rows; the model is asked for ``{"header_rows": N}`` at temperature 0 (and seed 0 where the
server honours it). The answer's first integer is taken when the reply is not that JSON.
The client is imported and built on first use, so the core runs offline without it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

#: Bumped when the prompt or the parsing of the answer changes.
PROMPT_VERSION = 1

SYSTEM_PROMPT = (
    "You read the first rows of a table taken from a spreadsheet. Decide how many of the "
    "first rows are header rows (column titles, possibly over several rows), not data. "
    'Reply with JSON only: {"header_rows": N}, N between 0 and 4.'
)


class HeaderDetectorError(RuntimeError):
    """The detector cannot be built (e.g. its API key variable is not set)."""


class OpenAIHeaderDetector:
    """Header rows by an OpenAI-compatible chat completion.

    Args:
        model: the chat model (or Azure deployment) name.
        base_url: the server's URL including ``/v1``; ``None`` for OpenAI's.
        api_key_env: environment variable holding the API key; ``""`` for a server that needs
            none.
        timeout_seconds: per request; ``max_retries`` as the ``openai`` client counts them.

    Raises:
        HeaderDetectorError: ``api_key_env`` names a variable that is not set.
    """

    def __init__(self, model: str, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_seconds: float = 30.0,
                 max_retries: int = 2) -> None:
        key = os.environ.get(api_key_env) if api_key_env else "unused"
        if not key:
            raise HeaderDetectorError(f"the header detector ({model}) needs an API key: set "
                                      f"the environment variable {api_key_env}")
        self.model = model
        self.base_url = base_url
        self._settings = dict(api_key=key, base_url=base_url, timeout=timeout_seconds,
                              max_retries=max_retries)
        self._client: Any = None

    @property
    def version(self) -> str:
        """``openai-compatible/<prompt version>:<model>``."""
        return f"openai-compatible/{PROMPT_VERSION}:{self.model}"

    def header_rows(self, rows: list[list[str]]) -> int | None:
        """Ask the model; returns its number of header rows, ``None`` when the reply holds no
        number.

        Raises:
            openai.OpenAIError: the request failed.
        """
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._settings)
        reply = self._client.chat.completions.create(
            model=self.model, temperature=0, seed=0,
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": json.dumps(rows, ensure_ascii=False)}])
        return parse_answer(reply.choices[0].message.content or "")


def parse_answer(text: str) -> int | None:
    """The header row count of a reply: ``header_rows`` of its JSON object, else its first
    integer, else ``None``."""
    try:
        value = json.loads(text)
        if isinstance(value, dict) and isinstance(value.get("header_rows"), int):
            return value["header_rows"]
    except ValueError:
        pass
    found = re.search(r"-?\d+", text)
    return int(found.group()) if found else None
