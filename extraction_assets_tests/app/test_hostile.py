"""Hostile input, bounded (issue #27): every recipe of :mod:`tools.bench.hostile`,
scaled down, ends typed (a success with issues, or a typed error with its
``extraction_issues`` row); no hidden or out-of-inbox text reaches ``chunks`` or LanceDB; one
file never harms another, the terminal or the data dir. The recipes run through the real
stages in-process; the command is run as a process for what only it shows (its output, its
time and peak RSS in the benchmark's smallest form, its worker processes after ``kill -9``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import duckdb
import lancedb
import pytest
from dagster import build_sensor_context
from markdown_it import MarkdownIt

from extraction_assets.app.ingest import ingest_paths, open_instance, refresh_stale
from extraction_assets.core.limits import Limits
from extraction_assets.core.render.picture import segmentation_svg
from extraction_assets.core.segment.rules import reads_as_sentence
from extraction_assets.defs.definitions import make_definitions
from extraction_assets.defs.partitions import add_partition_keys
from extraction_assets.defs.sensors import inbox_files, inbox_sensor
from extraction_assets.pipeline import StageError, run_pipeline
from extraction_assets.search.embedding import LOCAL_WINDOW_TOKENS, LocalEmbedder
from extraction_assets.search.vectors import TABLE_NAME
from extraction_assets.store.storage import DataStore
from tools.bench import hostile, hostile_recipes
from tools.bench.hostile import RECIPES
from tools.bench.hostile_recipes import (
    HTML_TEXTS,
    LEAKS,
    SECRETS,
    cell,
    odd_values,
    rows_xml,
    words,
    workbook,
    worksheet,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def pipeline(data: bytes, embedder: LocalEmbedder | None = None, limits: Limits | None = None,
             until: str = "rendered_chunks") -> dict:
    """Every table of the stages for ``data`` (chunks when an embedder counts the tokens)."""
    return run_pipeline(data, count_tokens=embedder.count_tokens if embedder else None,
                        count_tokens_batch=embedder.count_tokens_batch if embedder else None,
                        min_tokens=64, limits=limits, until=until)


def refused(data: bytes, limits: Limits | None = None) -> StageError:
    with pytest.raises(StageError) as info:
        pipeline(data, limits=limits, until="segmented_blocks")
    return info.value


def codes(tables: dict) -> list[str]:
    return [i["code"] for i in tables["extraction_issues"].to_pylist()]


def chunk_text(tables: dict) -> str:
    return "\n".join(tables["chunks"].column("text").to_pylist())


# -- hangs and blow-ups ------------------------------------------------------------------------
@pytest.mark.parametrize("name, fragment", [
    ("merge_fill", "bytes of cell text (max_text_bytes"),
    ("frame_bloat", "bytes of XML outside <sheetData>"),
    ("many_styles", "xl/styles.xml holds more than 16777216 bytes"),
    ("xlsb_parts", "package has 20006 parts; the limit is 10000"),
])
def test_full_size_recipes_are_refused_by_the_limit_that_counts_what_they_make(name, fragment):
    _, data = RECIPES[name].build(1.0)
    error = refused(data)
    assert error.error.code == RECIPES[name].expect == "limit_exceeded"
    assert fragment in error.error.message
    assert [i.code for i in error.output.issues] == ["limit_exceeded"]  # its issues row


def test_merged_values_count_in_every_cell_they_fill(embedder):
    _, data = RECIPES["merge_fill"].build(1 / 64)  # 8 merges of 32 x 32 over 1,000 characters
    tables = pipeline(data, until="normalized_grids")
    filled = tables["cells"].filter(tables["cells"].column("merged_from").is_valid())
    assert filled.num_rows == 8 * (32 * 32 - 1)
    text = sum(len(t.encode()) for t in tables["cells"].column("display_text").to_pylist())
    assert text > 8 * 1024 * 1000
    error = refused(data, Limits(max_text_bytes=8 * 1024 * 1000))
    assert (error.error.code, error.output.issues[0].stage) == ("limit_exceeded",
                                                                "normalized_grids")


def test_a_shared_string_counts_in_every_cell_that_uses_it():
    strings = f'<sst xmlns="{hostile_recipes._MAIN}"><si><t>{words(10_000)}</t></si></sst>'
    rows = "".join(f'<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>' for r in range(1, 501))
    data = replaced(hostile_recipes._with_strings(strings.encode()), "xl/worksheets/sheet1.xml",
                    lambda _: b"".join(worksheet(rows)))
    assert pipeline(data, until="parsed_sheets")["parsed_cells"].num_rows == 500
    error = refused(data, Limits(max_text_bytes=2_000_000))  # 500 x 10 KB = 5 MB
    assert error.error.code == "limit_exceeded" and error.output.issues[0].stage == "parsed_sheets"


def replaced(data: bytes, part: str, change) -> bytes:
    """The package ``data`` with ``part`` replaced by ``change(its bytes)``."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    parts[part] = change(parts[part])
    return hostile_recipes.package(parts)


@pytest.mark.parametrize("comment", ["", "<!-- the tree reader reads this sheet -->"])
def test_bytes_outside_the_sheet_data_are_bounded_by_either_reader(comment):
    _, data = RECIPES["frame_bloat"].build(1 / 64)  # 1 MB of <x/> after the sheet data
    data = _with_sheet_data_comment(data, comment)
    tables = pipeline(data, until="parsed_sheets")
    assert tables["parsed_cells"].column("value").to_pylist() == ["kept"]
    error = refused(data, Limits(max_tree_bytes=256 * 1024))
    assert error.error.code == "limit_exceeded"
    assert "outside <sheetData>" in error.error.message


def _with_sheet_data_comment(data: bytes, comment: str) -> bytes:
    return replaced(data, "xl/worksheets/sheet1.xml",
                    lambda xml: xml.replace(b"<sheetData>", b"<sheetData>" + comment.encode(), 1))


@pytest.mark.parametrize("name, scale", [("empty_rows", 1 / 512), ("one_huge_row", 1 / 128)])
@pytest.mark.parametrize("comment", ["", "<!-- the tree reader reads this sheet -->"])
def test_long_runs_of_empty_rows_and_cells_read_as_the_cells_they_hold(name, scale, comment):
    _, data = RECIPES[name].build(scale)  # 3.7 MB of <row r="9"/>; 4 MB of <c r="B1"/>
    tables = pipeline(_with_sheet_data_comment(data, comment), until="parsed_sheets")
    cells = tables["parsed_cells"]
    assert cells.select(["row", "col", "value"]).to_pylist() == [
        {"row": 1, "col": 1, "value": "first"}]
    assert "corrupt_workbook" not in codes(tables)


def test_a_text_longer_than_excel_allows_is_cut_there_and_embedded_by_its_window(embedder):
    _, data = RECIPES["huge_cell"].build(0.1)  # a table cell of 100,000 characters
    tables = pipeline(data, embedder)
    record = [json.loads(r) for r in tables["records"].column("display").to_pylist()][1]
    assert len(record["Note"]) == Limits.max_cell_chars == 32_767
    issue = next(i for i in tables["extraction_issues"].to_pylist()
                 if i["code"] == "cell_text_truncated")
    assert issue["ref"] == "B3" and "1 (the first at B3)" in issue["message"]
    # the local model reads the first LOCAL_WINDOW_TOKENS pieces: what follows changes nothing
    long = words(200_000)
    assert embedder.count_tokens(long) > LOCAL_WINDOW_TOKENS
    first, same, other = embedder.embed([long, long + " and a tail far beyond the window",
                                         long[:20_000]])
    assert (first == same).all() and not (first == other).all()


def test_the_sentence_test_keeps_its_meaning():
    assert reads_as_sentence("The totals are checked every month.  ")
    assert reads_as_sentence("合計は毎月確認する。")
    assert not reads_as_sentence("Four words end here.")
    assert not reads_as_sentence("Totals by region 2024")
    assert not reads_as_sentence(words(250_000))  # no final full stop
    assert reads_as_sentence(words(250_000) + "!")


def test_styles_beyond_the_limit_are_refused():
    _, data = RECIPES["many_styles"].build(1 / 64)  # 15,625 cellXfs
    assert pipeline(data, until="parsed_sheets")["styles"].num_rows == 15_625
    error = refused(data, Limits(max_styles=10_000))
    assert error.error.message == "the stylesheet has more than 10000 cellXfs entries"


def test_a_part_shared_by_many_sheets_is_read_once():
    _, data = RECIPES["shared_part"].build(0.01)  # 50 sheets on one part of 100 x 10 cells
    tables = pipeline(data, until="normalized_grids")
    assert tables["parsed_sheets"].num_rows == 50
    assert tables["parsed_cells"].num_rows == tables["cells"].num_rows == 1_000
    assert codes(tables).count("shared_sheet_part") == 49


def test_xlsb_gets_the_package_limits():
    _, data = RECIPES["xlsb_parts"].build(0.25)  # 5,003 entries
    assert refused(data, Limits(max_parts=1_000)).error.message == (
        "package has 5003 parts; the limit is 1000")


# -- untyped errors ----------------------------------------------------------------------------
ODD_ISSUES = {
    "column_zzz.xlsx": ("cell_outside_sheet", "ZZZ7"),
    "row_past_max.xlsx": ("cell_outside_sheet", "A1048577"),
    "format_400_zeros.xlsx": ("invalid_number_format", "A2"),
    "format_id_float.xlsx": ("bad_style", None),
    "font_id_negative.xlsx": ("bad_style", None),
    "font_size_big.xlsx": ("bad_style", None),
    "pane_inf.xlsx": ("bad_pane", None),
}


@pytest.mark.parametrize("name", sorted(ODD_ISSUES))
def test_odd_values_are_issues_and_the_rest_of_the_file_is_read(name, embedder):
    tables = pipeline(odd_values()[name], embedder)
    code, ref = ODD_ISSUES[name]
    assert (code, ref) in {(i["code"], i["ref"]) for i in
                           tables["extraction_issues"].to_pylist()}
    shown = dict(zip(tables["cells"].column("ref").to_pylist(),
                     tables["cells"].column("display_text").to_pylist()))
    assert shown["A1"] == "first"
    if name == "format_400_zeros.xlsx":
        assert shown["A2"] == "1.5"  # shown as General
    for sheet in tables["sheets"].to_pylist():  # the pictures of the segmentation draw
        assert segmentation_svg(sheet["sheet_name"], sheet["used_range"],
                                tables["blocks"].to_pylist()).startswith("<svg")


# -- leaks -------------------------------------------------------------------------------------
def test_a_chart_never_reads_a_hidden_sheet_row_or_column(embedder):
    tables = pipeline(LEAKS["hidden_chart.xlsx"][0](), embedder)
    chart = next(b for b in tables["blocks"].to_pylist() if b["kind"] == "chart")
    assert "Jan = 10" in chart["text"] and "Mar = 9" in chart["text"]
    for secret in SECRETS:
        assert secret not in chart["text"] and secret not in chunk_text(tables)
    assert codes(tables).count("chart_hidden_source") == 2


def test_markdown_chunks_render_no_html_and_no_link(embedder):
    tables = pipeline(LEAKS["html_cells.xlsx"][0](), embedder)
    renderer = MarkdownIt("commonmark").enable("table")
    markdown = [chunk_text(tables), *tables["renderings"].column("markdown").to_pylist()]
    for text in markdown:
        html = renderer.render(text)
        for tag in ("<script", "<img", "<iframe", "<a ", "javascript:alert(3)\""):
            assert tag not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "<table>" not in html
    table = next(r for r in tables["renderings"].to_pylist() if r["kind"] == "table")
    assert "&lt;img src=x onerror=alert(2)&gt;" in table["html"]
    for text in HTML_TEXTS:  # the records keep the text as written
        assert text in tables["records"].column("record").to_pylist()[HTML_TEXTS.index(text)]


@pytest.mark.parametrize("name", ["dtd_after_comment.xlsx", "dtd_utf16.xlsx",
                                  "duplicate_part.xlsx", "case_part.xlsx"])
def test_a_dtd_anywhere_in_the_prolog_and_duplicate_part_names_are_refused(name):
    build, code = LEAKS[name]
    error = refused(build())
    assert error.error.code == code and [i.code for i in error.output.issues] == [code]


def test_the_inbox_sensor_reads_only_files_inside_the_inbox(tmp_path):
    store = DataStore(tmp_path / "data")
    store.inbox.mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.csv").write_text("a,b\nSECRET-SHEET,1\nc,2\n")
    (store.inbox / "leak.csv").symlink_to(outside / "secret.csv")
    (store.inbox / "loop.csv").symlink_to(store.inbox / "loop.csv")
    (store.inbox / "gone.csv").symlink_to(tmp_path / "missing.csv")
    (store.inbox / "sub").mkdir()
    (store.inbox / "sub" / "ok.csv").write_text("x,y\n1,2\n3,4\n")
    (store.inbox / "inside.csv").symlink_to(store.inbox / "sub" / "ok.csv")
    assert inbox_files(store.inbox) == [store.inbox / "inside.csv", store.inbox / "sub" / "ok.csv"]
    defs = make_definitions(str(store.root))
    with open_instance(store) as instance:
        result = inbox_sensor(build_sensor_context(instance=instance, resources=defs.resources))
    [request] = result.run_requests
    assert store.source_of(request.partition_key)["filename"] in ("inside.csv", "ok.csv")
    assert not any(b"SECRET" in p.read_bytes() for p in (store.root / "store").rglob("*")
                   if p.is_file())


# -- one file harms others, or the terminal ----------------------------------------------------
def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_work_ratio_leaves_the_command_start_out_and_small_work_unjudged():
    assert hostile.work_ratio(12.0, 22.0, 7.0) == 3.0  # 5 s of work, then 15 s
    assert hostile.work_ratio(8.0, 8.4, 7.0) is None  # 1 s of work: the noise is larger


@pytest.mark.slow
def test_benchmark_smallest_form_every_input_ends_typed_within_bounds(tmp_path):
    """The benchmark's last step at a small scale, every hostile input in one command: each
    file gets its line, the command stays within 1 GB, and no hidden text reaches the
    chunks or LanceDB (chunk and record units); search prints names and cell text as text.
    (The pairs of sizes are measured by the benchmark itself:
    ``python -m tools.bench.hostile``.)"""
    results, missed = hostile.benchmark(tmp_path, 0.004, [])
    assert missed == [] and results["recipes"] == {}
    together = results["together"]
    assert together["peak_rss_mb"] <= hostile.MAX_RSS_MB
    lines = {Path(line.split()[1]).name: line for line in together["lines"]}  # by file
    assert sorted(lines) == sorted(Path(f).name for f in together["files"])
    assert together["exit_code"] == 1
    assert lines["loop.xlsx"].split() == ["failed", str(tmp_path / "all" / "loop.xlsx"),
                                          "cannot", "read", "file:", "Too", "many", "levels",
                                          "of", "symbolic", "links"]
    assert lines["in_markup_folder.xlsx"].startswith(
        f"success   {tmp_path}/all/[/bold]/in_markup_folder.xlsx  sheets=1")
    for name, (_, code) in LEAKS.items():
        assert (lines[name].startswith("success") if code == "success"
                else f": {code}: " in lines[name]), lines[name]
    for name in odd_values():
        assert lines[name].startswith("success"), lines[name]
    data = tmp_path / "data-together"
    with duckdb.connect(str(DataStore(data).warehouse_path), read_only=True) as con:
        texts = [t for (t,) in con.execute("select text from chunks").fetchall()]
        part = con.execute("select part from read_parquet(?) where sheet_name = 'S[/]'", [
            str(data / "parquet" / "parsed_sheets" / "*.parquet")]).fetchone()
    assert part == ("xl/[/b].xml",)
    vectors = lancedb.connect(str(DataStore(data).lancedb_uri)).open_table(TABLE_NAME)
    texts += vectors.to_arrow().column("text").to_pylist()
    assert texts and not [t for t in texts for s in SECRETS if s in t]
    found = run_cli("search", "North retitled", "--data-dir", str(data), "-k", "1")
    assert found.returncode == 0, found.stderr
    assert "\x1b" not in found.stdout and "\x07" not in found.stdout
    assert "North \\x1b\\[2J\\x1b]0;retitled\\x07 end" in found.stdout
    assert "sheet S[/] range A1:A2" in found.stdout


@pytest.mark.integration
def test_an_up_to_date_partition_without_lineage_gets_it_again(tmp_path):
    path = tmp_path / "one.xlsx"
    path.write_bytes(workbook([("S", worksheet(rows_xml({1: [cell("A1", "x")]})))]))
    [first] = ingest_paths([path], tmp_path / "data", until="workbook")
    lineage = DataStore(tmp_path / "data").table_path("lineage", first.workbook_hash)
    lineage.unlink()  # as after a run whose lineage export failed on a full disk
    [again] = ingest_paths([path], tmp_path / "data", until="workbook")
    assert again.status == "unchanged" and lineage.exists()
    assert DataStore(tmp_path / "data").read_table("lineage", first.workbook_hash).num_rows == 1


@pytest.mark.integration
def test_a_file_changed_after_it_was_registered_keeps_the_bytes_of_its_partition(tmp_path):
    path = tmp_path / "book.xlsx"
    path.write_bytes(workbook([("S", worksheet(rows_xml({1: [cell("A1", "before")]})))]))
    store = DataStore(tmp_path / "data")
    digest, _ = store.register_source(path)
    path.write_bytes(workbook([("S", worksheet(rows_xml({1: [cell("A1", "after!")]})))]))
    with open_instance(store) as instance:
        add_partition_keys(instance, [digest])
    [result] = refresh_stale(store.root)
    assert (result.workbook_hash, result.status) == (digest, "success")
    assert store.read_table("parsed_cells", digest).column("value").to_pylist() == ["before"]


def _unshared_mount(tmp_path: Path, options: str, *command: str) -> subprocess.CompletedProcess:
    """``command`` in a mount namespace of its own where ``tmp_path/mnt`` is a tmpfs mounted
    with ``options`` (the mount goes with the namespace); skips when that is not permitted."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True) \
        if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no mount namespace (unshare -m) for a read-only or full file system")
    script = (f"mount -t tmpfs -o {options} tmpfs {mnt} && "
              + " ".join(f"'{c}'" for c in command))
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


@pytest.mark.integration
def test_a_read_only_data_dir_is_one_line_before_anything_runs(tmp_path):
    book = tmp_path / "book.xlsx"
    book.write_bytes(workbook([("S", worksheet(rows_xml({1: [cell("A1", "x")]})))]))
    proc = _unshared_mount(tmp_path, "ro,size=1m", sys.executable, "-m", "extraction_assets.app.cli",
                           "ingest", str(book), "--data-dir", str(tmp_path / "mnt" / "data"))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == (f"cannot write to the data dir {tmp_path}/mnt/data: "
                                   "Read-only file system")


@pytest.mark.integration
def test_a_full_disk_fails_files_in_one_line_each(tmp_path):
    books = []
    for k in range(2):
        books.append(tmp_path / f"book{k}.xlsx")
        books[-1].write_bytes(workbook([("S", worksheet(rows_xml(
            {r: [cell(f"A{r}", words(200) + str(k))] for r in range(1, 200)})))]))
    proc = _unshared_mount(tmp_path, "size=1m", sys.executable, "-m", "extraction_assets.app.cli",
                           "ingest", *map(str, books), "--data-dir", str(tmp_path / "mnt" / "d"))
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()  # one per file; or one "stopped:" line, before any file
    stopped = [line for line in proc.stderr.splitlines() if line.startswith("stopped: ")]
    assert ([line.split()[:2] for line in lines] == [["failed", str(b)] for b in books]
            or (stopped and not lines)), (lines, stopped)
    assert all("disk is full" in line or "No space left on device" in line
               for line in lines + stopped)


@pytest.mark.integration
def test_kill_9_of_a_parallel_ingest_leaves_no_worker_running(tmp_path):
    from tools.bench.workbooks import generate_workbook

    files = [generate_workbook(tmp_path / f"orders{k}.xlsx", 5_000 + k) for k in range(4)]
    proc = subprocess.Popen([sys.executable, "-m", "extraction_assets.app.cli", "ingest", *map(
        str, files), "--jobs", "2", "--data-dir", str(tmp_path / "data")], cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def session() -> list[int]:
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and _sid(int(p)) == proc.pid]

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _worker_running(session(), proc.pid):
        time.sleep(0.2)
    assert _worker_running(session(), proc.pid), "no worker started"
    proc.kill()  # SIGKILL: no cleanup of its own
    proc.wait()
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and session():
        time.sleep(0.5)
    left = session()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _worker_running(pids: list[int], main: int) -> bool:
    """Whether a step process (forked by the forkserver of Dagster's multiprocess executor, a
    grandchild of ``main``) runs a step."""
    parents = {}
    for pid in pids:
        try:
            parents[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    servers = {pid for pid, parent in parents.items() if parent == main}
    return any(parent in servers for parent in parents.values())
