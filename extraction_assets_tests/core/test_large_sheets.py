"""Sheets that are mostly empty but declare a huge extent (acceptance kinds B33 and B34): only
the real cells are read, the used range comes from them, and segmentation is not stretched;
and the Arrow memory pool the package selects to keep the peak of large sheets low."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from extraction_assets.pipeline import run_pipeline
from extraction_assets_tests.builders import Sheet, sst, t, worksheet, xlsx_bytes


@pytest.fixture(scope="module")
def million_empty_rows() -> bytes:
    header = ["Code", "Site", "Qty", "Unit", "Price", "Status", "Checked"]
    strings = header + ["pcs", "open", "no"] + [f"Site {k}" for k in range(1, 6)]
    index = {s: i for i, s in enumerate(strings)}
    rows = ['<row r="1">' + "".join(f'<c r="{c}1" t="s"><v>{index[h]}</v></c>'
                                    for c, h in zip("BCDEFGH", header)) + "</row>"]
    for r in range(2, 83):
        site = index[f"Site {(r - 2) % 5 + 1}"]
        rows.append(
            f'<row r="{r}"><c r="B{r}" t="inlineStr"><is><t>C{r:04d}</t></is></c>'
            f'<c r="C{r}" t="s"><v>{site}</v></c><c r="D{r}"><v>{r}</v></c>'
            f'<c r="E{r}" t="s"><v>{index["pcs"]}</v></c><c r="F{r}"><v>{r * 1.25}</v></c>'
            f'<c r="G{r}" t="s"><v>{index["open"]}</v></c><c r="H{r}" t="s"><v>{index["no"]}</v></c></row>')
    rows.append("".join(f'<row r="{r}"/>' for r in range(83, 1_048_571)))
    xml = worksheet("".join(rows), dimension="B1:H1048570")
    return xlsx_bytes([Sheet("Inventory", xml)], shared_strings=sst(*(t(s) for s in strings)))


def test_million_declared_empty_rows_give_one_table(million_empty_rows):
    parsed = normalized = segmented = run_pipeline(million_empty_rows)
    assert parsed["parsed_cells"].num_rows == 7 * 82
    sheet = normalized["sheets"].to_pylist()[0]
    assert sheet["declared_dimension"] == "B1:H1048570"
    assert sheet["used_range"] == "B1:H82"
    tables = [b for b in segmented["blocks"].to_pylist() if b["kind"] == "table"]
    assert [b["a1_range"] for b in tables] == ["B1:H82"]
    headers = [c["header"] for c in segmented["block_columns"].to_pylist()]
    assert headers == ["Code", "Site", "Qty", "Unit", "Price", "Status", "Checked"]


def test_stray_cell_in_the_last_row_is_its_own_block():
    header = "".join(f'<c r="{col}1" t="inlineStr"><is><t>col{k:03d}</t></is></c>'
                     for k, col in enumerate(_columns(200), start=1))
    values = "".join(f'<c r="{col}2"><v>{k}</v></c>' for k, col in enumerate(_columns(200), start=1))
    rows = (f'<row r="1">{header}</row><row r="2">{values}</row>'
            '<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>x</t></is></c></row>')
    data = xlsx_bytes([Sheet("Wide", worksheet(rows))])
    normalized = segmented = run_pipeline(data)
    assert normalized["sheets"].to_pylist()[0]["used_range"] == "A1:GR1048576"
    blocks = [(b["kind"], b["a1_range"]) for b in segmented["blocks"].to_pylist()]
    assert blocks == [("table", "A1:GR2"), ("title", "A1048576")]
    assert len(segmented["block_columns"].to_pylist()) == 200


def _columns(n: int) -> list[str]:
    from extraction_assets.core.a1 import column_letter

    return [column_letter(i) for i in range(1, n + 1)]


@pytest.mark.integration
@pytest.mark.parametrize("chosen, expected", [(None, "jemalloc"), ("system", "system")])
def test_arrow_allocates_from_jemalloc_unless_a_pool_is_chosen(chosen, expected):
    """Importing the package selects Arrow's jemalloc pool (lower peak RSS on large sheets);
    a pool named by ARROW_DEFAULT_MEMORY_POOL is left as the user chose it."""
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow build has no jemalloc pool")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    code = "import extraction_assets, pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == expected


@pytest.mark.integration
@pytest.mark.parametrize("package, user_conf, narenas", [
    (True, "stats_print:true", "1"), (True, "narenas:3,stats_print:true", "3"),
    (False, "stats_print:true", None)])
def test_arrow_jemalloc_gets_one_arena_unless_the_user_chooses(package, user_conf, narenas):
    """Importing the package puts ``narenas:1`` before the user's ``JE_ARROW_MALLOC_CONF``
    (Arrow's jemalloc then prints its options at exit with ``stats_print``)."""
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow build has no jemalloc pool")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["JE_ARROW_MALLOC_CONF"] = user_conf
    code = ("import extraction_assets\n" if package else "") + (
        "import pyarrow as pa\npa.set_memory_pool(pa.jemalloc_memory_pool())\n"
        "pa.array(range(100000))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    line = next(ln for ln in out.stderr.splitlines() if "opt.narenas:" in ln)
    if narenas is None:
        assert line.split(":")[1].strip() != "1"  # jemalloc's default: 4 per CPU
    else:
        assert line.split(":")[1].strip() == narenas
