"""Chunking counts each piece of text a bounded number of times, so its work grows linearly
with the text (wide rows split by columns, long tables). The tokenizer is the real one; the
counter only adds up how many characters it was given."""

from __future__ import annotations

from openpyxl import Workbook

from extraction_assets.pipeline import run_pipeline
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets_tests.builders import save_openpyxl


class CountingTokenizer:
    """The local embedder's token counter, adding up the characters it was asked to count."""

    def __init__(self) -> None:
        self.count_tokens_of = LocalEmbedder().count_tokens
        self.characters = 0

    def __call__(self, text: str) -> int:
        self.characters += len(text)
        return self.count_tokens_of(text)


def _chunks(data: bytes, tokenizer, max_tokens):
    tables = run_pipeline(data, count_tokens=tokenizer, max_tokens=max_tokens,
                          min_tokens=64)
    return tables["chunks"].to_pylist()


def test_a_wide_row_is_split_counting_each_cell_a_few_times(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws.append(["Key"] + [f"Measure {i:03d}" for i in range(1, 401)])
    ws.append(["row-1"] + [f"value {i} of the wide row" for i in range(1, 401)])
    ws.append(["row-2"] + list(range(1, 401)))
    tokenizer = CountingTokenizer()
    chunks = _chunks(save_openpyxl(wb, tmp_path / "wide.xlsx"), tokenizer, 256)
    wide = [c for c in chunks if c["rows"] == [2]]
    assert len(wide) > 5
    assert all(c["n_tokens"] == tokenizer.count_tokens_of(c["text"]) <= 256 for c in chunks)
    # every column of row 2 is in exactly one part, after the row key
    cells = [line for c in wide for line in c["text"].splitlines()[-1:]]
    values = [v.strip() for line in cells for v in line.strip("|").split("|")[1:]]
    assert values == [f"value {i} of the wide row" for i in range(1, 401)]
    text = sum(len(c["text"]) for c in chunks)
    assert tokenizer.characters <= 6 * text  # was ~30x: each added column recounted its part


def test_a_long_table_counts_each_row_once_for_packing_and_once_in_its_chunk(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws.append(["Region", "Units", "Notes"])
    for r in range(1, 2001):
        ws.append([f"Region {r % 7}", r, f"note {r}"])
    tokenizer = CountingTokenizer()
    chunks = _chunks(save_openpyxl(wb, tmp_path / "rows.xlsx"), tokenizer, 512)
    assert [r for c in chunks for r in c["rows"]] == list(range(2, 2002))
    assert all(c["n_tokens"] == tokenizer.count_tokens_of(c["text"]) <= 512 for c in chunks)
    # ~1.9x: rows once for packing, each chunk once; packing no longer recounts every chunk
    assert tokenizer.characters <= 2.2 * sum(len(c["text"]) for c in chunks)
