"""The trust features' resources and ``<data-dir>/trust.toml``."""

from __future__ import annotations

import pytest

from extraction_assets.core.trust.redact import ColumnRule, RedactionPolicy
from extraction_assets.defs.trust_resources import trust_resources


def test_defaults_redact_nothing_and_use_the_rules(tmp_path):
    resources = trust_resources(tmp_path)
    assert resources["redaction"].policy() is None
    assert resources["dual_read"].max_cells == 100_000
    assert resources["header_detector"].detector() is None


def test_the_file_configures_every_feature(tmp_path):
    (tmp_path / "trust.toml").write_text(
        '[redaction]\nrules = ["email", "iban"]\nkeep_raw_values = true\n'
        '[[redaction.columns]]\nheader = "tax id"\nname = "tax_id"\n'
        '[dual_read]\nmax_cells = 0\n'
        '[header_detector]\nprovider = "openai"\nmodel = "m"\nbase_url = "http://h/v1"\n'
        'api_key_env = ""\n')
    resources = trust_resources(tmp_path)
    assert resources["redaction"].policy() == RedactionPolicy(
        ("email", "iban"), (ColumnRule("tax id", r"(?s).+", "tax_id"),), True)
    assert resources["dual_read"].max_cells == 0
    assert resources["header_detector"].detector().version == "openai-compatible/1:m"


@pytest.mark.parametrize("text, message", [
    ('[redaction]\nrules = ["ssn"]\n', "unknown redaction rule"),
    ("[redactions]\n", "unknown section"),
    ("[dual_read]\nmax_cells = -1\n", "greater than or equal to 0"),
    ("[redaction\n", "trust.toml"),
])
def test_a_wrong_file_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "trust.toml").write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        trust_resources(tmp_path)
    assert "trust.toml" in str(info.value)
