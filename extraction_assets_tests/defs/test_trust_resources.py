"""The trust features' resources and ``<data-dir>/trust.toml``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from extraction_assets.core.trust.redact import ColumnRule, RedactionPolicy
from extraction_assets.defs.trust_resources import TrustConfigError, trust_resources


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
    with pytest.raises(TrustConfigError, match=message) as info:
        trust_resources(tmp_path)
    assert "trust.toml" in str(info.value)


@pytest.mark.integration
def test_ingest_with_a_wrong_file_is_a_usage_error(tmp_path):
    """The CLI stops before any file with exit code 2 and the file's error in one line."""
    (tmp_path / "trust.toml").write_text('[redaction]\nrules = ["emial"]\n')
    book = tmp_path / "book.csv"
    book.write_text("a,b\n1,2\n3,4\n5,6\n")
    proc = subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", "ingest",
                           str(book), "--data-dir", str(tmp_path), "--until", "workbook"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"{tmp_path / 'trust.toml'}: unknown redaction rule(s) emial; "
                                   "built-in rules are card, iban, email, phone")
    assert proc.stdout == ""
