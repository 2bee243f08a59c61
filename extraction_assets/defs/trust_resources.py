"""Dagster resources of the trust features: redaction, the dual read and the header detector.

Each defaults to what runs offline and changes nothing: no redaction, the dual read on
workbooks up to 100,000 cells, the segmenter's own header rules. :func:`trust_resources`
reads their settings from ``<data-dir>/trust.toml`` when it exists (what the CLI uses), e.g.::

    [redaction]
    rules = ["email", "phone", "iban", "card"]
    keep_raw_values = false               # true: parsed_cells keeps the value as written
    [[redaction.columns]]
    header = "tax id"                     # regex, searched in the column's header path
    pattern = ".+"                        # regex, searched in the cell's text (default: all)
    name = "tax_id"

    [dual_read]
    max_cells = 100000                    # 0: off

    [header_detector]
    provider = "openai"                   # default "rules"
    model = "gpt-4o-mini"
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "OPENAI_API_KEY"        # "" for a server that needs no key
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from dagster import Config, ConfigurableResource
from pydantic import Field, PrivateAttr

from extraction_assets.core.trust.headers import HeaderDetector
from extraction_assets.core.trust.llm_headers import OpenAIHeaderDetector
from extraction_assets.core.trust.redact import ColumnRule, RedactionPolicy

#: The settings file of the trust features in a data dir.
TRUST_FILE = "trust.toml"


class ColumnRedaction(Config):
    """A user redaction rule: matches of ``pattern`` in the columns whose header matches
    ``header`` (both regular expressions; the header searched case-insensitively)."""

    header: str = Field(description="Regular expression searched in the column's header path.")
    pattern: str = Field(default=r"(?s).+", description="Regular expression of what to redact.")
    name: str = Field(default="column", description="Rule name shown in the marker and counts.")


class RedactionResource(ConfigurableResource):
    """What is redacted from every cell's text before records, renderings, chunks and
    embeddings (see :class:`~extraction_assets.core.trust.redact.RedactionPolicy`). Default:
    nothing."""

    rules: list[str] = Field(
        default_factory=list, description="Built-in rules: email, phone, iban, card.")
    columns: list[ColumnRedaction] = Field(
        default_factory=list, description="User rules by column header.")
    keep_raw_values: bool = Field(
        default=False, description="Keep the value as written in parsed_cells (only there).")

    def policy(self) -> RedactionPolicy | None:
        """The policy, or ``None`` when nothing is redacted.

        Raises:
            ValueError: a user rule's regular expression or name is not valid.
        """
        policy = RedactionPolicy(tuple(self.rules),
                                 tuple(ColumnRule(c.header, c.pattern, c.name)
                                       for c in self.columns), self.keep_raw_values)
        return policy if policy.active else None


class DualReadResource(ConfigurableResource):
    """The second, independent read of each OOXML workbook by python-calamine, compared cell
    by cell (table ``review_items``, view ``review_queue``)."""

    max_cells: int = Field(default=100_000, ge=0,
                           description="Compare workbooks up to this many cells; 0: off.")


class HeaderDetectorResource(ConfigurableResource):
    """Who decides the header rows of ambiguous tables: ``rules`` (default, the segmenter's
    own) or ``openai`` (an OpenAI-compatible chat model that gets the first rows of each
    ambiguous table; see :mod:`extraction_assets.core.trust.headers`)."""

    provider: Literal["rules", "openai"] = "rules"
    model: str | None = Field(default=None, description="Chat model (openai provider).")
    base_url: str | None = Field(default=None, description="OpenAI-compatible URL incl. /v1.")
    api_key_env: str = Field(default="OPENAI_API_KEY",
                             description="Variable holding the API key; '' for none.")
    timeout_seconds: float = Field(default=30.0, gt=0)

    _detector: Any = PrivateAttr(default=None)

    def detector(self) -> HeaderDetector | None:
        """The configured detector (``None``: the rules), built once.

        Raises:
            ValueError: ``openai`` without a ``model``.
            HeaderDetectorError: the API key variable is not set.
        """
        if self.provider == "rules":
            return None
        if not self.model:
            raise ValueError("header_detector: the openai provider needs a model")
        if self._detector is None:
            self._detector = OpenAIHeaderDetector(self.model, self.base_url, self.api_key_env,
                                                  self.timeout_seconds)
        return self._detector


class TrustConfigError(ValueError):
    """``<data-dir>/trust.toml`` cannot be used: not valid TOML, an unknown section, or a
    setting its resource refuses. The message names the file."""


def trust_resources(data_dir: str | Path) -> dict[str, ConfigurableResource]:
    """The resources ``redaction``, ``dual_read`` and ``header_detector``, configured by
    ``<data_dir>/trust.toml`` when it exists (its sections ``[redaction]``, ``[dual_read]``,
    ``[header_detector]``), else with their defaults.

    Raises:
        TrustConfigError: the file is not valid TOML, has another section, or a setting is
            wrong (the message names the file).
    """
    path = Path(data_dir) / TRUST_FILE
    settings: dict = {}
    if path.exists():
        try:
            settings = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise TrustConfigError(f"{path}: {exc}") from None
    unknown = sorted(set(settings) - {"redaction", "dual_read", "header_detector"})
    if unknown:
        raise TrustConfigError(f"{path}: unknown section(s) {', '.join(unknown)}")
    try:
        redaction = RedactionResource(**settings.get("redaction", {}))
        redaction.policy()
        return {"redaction": redaction,
                "dual_read": DualReadResource(**settings.get("dual_read", {})),
                "header_detector": HeaderDetectorResource(**settings.get("header_detector", {}))}
    except Exception as exc:  # pydantic's validation errors and the policy's ValueError
        raise TrustConfigError(f"{path}: {exc}" if path.exists() else str(exc)) from None
