"""Hostile input, third pass (issue #34), what the outputs show: a chunk renders as the text of
its cells in CommonMark and in GFM with autolinks (no link, image or formatting the workbook
did not declare), names with bidirectional controls show them escaped, and an unreadable
argument of ``ingest`` is a failed file of the batch, not a usage error."""

from __future__ import annotations

import html
import io
import json
import os
import random
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import cmarkgfm
import pyarrow as pa
import pytest
from cmarkgfm.cmark import Options
from markdown_it import MarkdownIt

from extraction_assets.core.render.escape import md_cell, md_cells, md_text, printable
from extraction_assets.pipeline import run_pipeline
from tools.bench.hostile import RECIPES
from tools.bench.hostile_recipes import (
    BIDI_NAME,
    LIVE_LINK_NOTE,
    LIVE_LINK_TEXTS,
    bidi_names,
    cell,
    live_links,
    package,
    rows_xml,
    workbook,
    worksheet,
)

REPO = Path(__file__).resolve().parents[2]

#: The renderers a chunk is shown with: CommonMark, markdown-it's GFM with linkify (fuzzy links
#: and e-mails too) and GitHub's own cmark-gfm (extended autolinks, strikethrough, tables), raw
#: HTML let through so that any tag a text would make shows.
RENDERERS = {
    "commonmark": MarkdownIt("commonmark").enable("table").render,
    "markdown-it gfm linkify": MarkdownIt("gfm-like", {"linkify": True}).render,
    "cmark-gfm": lambda text: cmarkgfm.github_flavored_markdown_to_html(
        text, options=Options.CMARK_OPT_UNSAFE),
}
#: Tags no cell text may make (headings and tables are the chunk's own).
FORBIDDEN = re.compile(r"<(a|img|em|strong|code|del|s|b|sup|blockquote|pre|hr|ul|ol|script|"
                       r"iframe)[\s>/]")


def words(text: str) -> int:
    return len(text.split())


def visible(fragment: str) -> str:
    """The text a person sees of rendered HTML: tags out, references decoded, word joiners
    (default-ignorable: they show nothing) out, whitespace squeezed."""
    text = html.unescape(re.sub(r"<[^>]*>", " ", fragment)).replace("\u2060", "")
    return " ".join(text.split())


def rendered_cells(page: str) -> list[str]:
    return [visible(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", page, re.S)]


def test_markdown_escapes_render_every_text_as_itself():
    """Each hostile text, and each ASCII punctuation character in a word, renders as itself
    in a table cell and in a paragraph, in every renderer."""
    texts = [*LIVE_LINK_TEXTS, *(f"a{c}b {c}x{c} {c}{c}" for c in
                                 "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")]
    for text in texts:
        for name, render in RENDERERS.items():
            page = render(f"| h |\n| --- |\n| {md_cell(text)} |")
            assert not FORBIDDEN.search(page), (name, text, page)
            assert rendered_cells(page) == ["h", " ".join(text.split())], (name, text, page)
            page = render(md_text(text))
            assert not FORBIDDEN.search(page) and "<h" not in page, (name, text, page)
            assert visible(page) == " ".join(text.split()), (name, text, page)


def test_the_column_wise_escape_is_the_escape_of_each_text():
    """:func:`md_cells` sends to Python only the texts its RE2 pattern finds: every text the
    escape changes must be among them (random texts of markup, letters, digits, blanks)."""
    rng = random.Random(34)
    alphabet = "ab1.2_ #*`~[]|@<>&;/:\\-=\n\r\t\u00e9\u0663\u00b2"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(8))) for _ in range(20_000)]
    texts += ["1.5", "1,234.56", "2024.01.02", "a.b", "x.1", "1.a", "\u0663.\u0663"]
    nulls = pa.nulls(len(texts), pa.string())
    assert md_cells(nulls, pa.array(texts)).to_pylist() == [md_cell(t) for t in texts]
    assert md_cells(pa.array(texts), pa.array(texts)).to_pylist() == [
        md_cell(t, marked=True) for t in texts]


def test_live_links_in_cells_render_as_the_cells_text():
    name, data = live_links(0.002)
    tables = run_pipeline(data, count_tokens=words, max_tokens=512, min_tokens=64)
    assert not [i for i in tables["extraction_issues"].to_pylist() if i["severity"] == "error"]
    cells = {c["ref"]: c["display_text"] for c in tables["cells"].to_pylist()
             if c["ref"].startswith("B")}
    texts = [*tables["chunks"].column("text").to_pylist(),
             *tables["renderings"].column("markdown").to_pylist()]
    shown_cells: set[str] = set()
    paragraphs = []
    for text in texts:
        for renderer, render in RENDERERS.items():
            page = render(text)
            assert not FORBIDDEN.search(page), (renderer, page)
            shown_cells.update(rendered_cells(page))
            paragraphs += [visible(p) for p in re.findall(r"<p>(.*?)</p>", page, re.S)]
    for ref, text in cells.items():
        assert " ".join(text.split()) in shown_cells, (ref, text)
    assert " ".join(LIVE_LINK_NOTE.split()) in paragraphs
    # the records and the HTML keep the text; the HTML escapes it with the library's escape
    records = "\n".join(tables["records"].column("record").to_pylist())
    assert json.dumps(LIVE_LINK_TEXTS[0])[1:-1] in records
    table_html = next(r["html"] for r in tables["renderings"].to_pylist()
                      if r["kind"] == "table")
    assert "<td>&lt;b&gt;bold&lt;/b&gt; &lt;br&gt; &lt;sup&gt;1&lt;/sup&gt;</td>" in table_html
    assert not re.search(r"<(a|img|b|script)[\s>]", table_html)


def _with_shared_strings(strings: list[str], rows: dict[int, list[str]]) -> bytes:
    """A one-sheet xlsx whose cells (by row) refer to ``strings`` (``<si>`` contents)."""
    sheet = worksheet("".join(
        f'<row r="{r}">' + "".join(f'<c r="{chr(65 + k)}{r}" t="s"><v>{v}</v></c>'
                                   for k, v in enumerate(values)) + "</row>"
        for r, values in rows.items()))
    sst = ('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
           + "".join(f"<si>{si}</si>" for si in strings) + "</sst>")
    data = workbook([("S", sheet)], extra={"xl/sharedStrings.xml": sst})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", b'<Relationship Id="rIdT" Type="http://schemas.openxmlformats.org/'
        b'officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>'
        b"</Relationships>")
    return package(parts)


def test_rich_text_keeps_its_superscripts_and_escapes_its_runs():
    """A cell with a superscript run is written as HTML (its runs escaped): its ``<sup>`` stays
    a tag, its ``&lt;`` a reference, and the Markdown of its runs is escaped; in a table and
    in a note."""
    rich = ('<r><t>m</t></r><r><rPr><vertAlign val="superscript"/></rPr><t>2</t></r>'
            '<r><t xml:space="preserve"> of *site* &lt;b&gt; &amp;amp; www.x.com</t></r>')
    strings = ["<t>Name</t>", "<t>Area</t>", "<t>a_b_ *x* &lt;y&gt;</t>", rich, "<t>c</t>",
               "<t>d</t>", "<t>&lt;script&gt;alert(1)&lt;/script&gt; *z*</t>"]
    data = _with_shared_strings(strings, {1: [0, 1], 2: [2, 3], 3: [4, 4], 4: [5, 5],
                                          7: [3, 6]})
    tables = run_pipeline(data, count_tokens=words)
    shown = "m<sup>2</sup> of *site* &lt;b&gt; &amp;amp; www.x.com"
    for text in [*tables["chunks"].column("text").to_pylist(),
                 *tables["renderings"].column("markdown").to_pylist()]:
        for renderer, render in RENDERERS.items():
            page = render(text)
            assert shown in page, (renderer, page)
            assert not re.search(r"<(a|em|b|script)[\s>]", page), (renderer, page)
    # the note (the rich cell beside a plain one): its HTML, and its text as it reads
    note = next(r for r in tables["renderings"].to_pylist() if r["kind"] != "table")
    assert "&lt;script&gt;" in note["html"] and "<script" not in note["html"]
    assert note["text"] == ("m2 of *site* <b> &amp; www.x.com "
                            "<script>alert(1)</script> *z*")
    table = "\n".join(tables["chunks"].column("text").to_pylist())
    assert "a_b_ *x* &lt;y&gt;" in RENDERERS["cmark-gfm"](table)


def test_bidi_controls_in_names_show_escaped_in_headings_and_headers():
    name, data = bidi_names(0.01)
    tables = run_pipeline(data, count_tokens=words, max_tokens=512)
    bidi = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
    chunks = tables["chunks"].to_pylist()
    assert chunks and not any(bidi.search(c["text"]) for c in chunks)
    first = chunks[0]["text"]
    for renderer, render in RENDERERS.items():
        page = render(first)
        assert f"<h1>{printable(BIDI_NAME)}0</h1>" in page, (renderer, page)
        assert "Title \\u20670\\u2069 \\u202dover\\u202c" in visible(page)
        assert rendered_cells(page)[:2] == ["Name\\u200f", "Amount \\u061c\\u200e"]
    # the names as they are stay in the data: the sheets view, the chunks' own fields
    assert tables["sheets"].column("sheet_name").to_pylist()[0] == f"{BIDI_NAME}0"
    assert chunks[0]["sheet_name"] == f"{BIDI_NAME}0"
    assert chunks[0]["heading_path"][0] == f"{BIDI_NAME}0"


def test_the_recipes_of_issue_34_are_registered_and_end_in_success():
    assert RECIPES["live_links"].expect == RECIPES["bidi_names"].expect == "success"
    assert live_links(0.5) == live_links(0.5)  # deterministic bytes


# -- the command ---------------------------------------------------------------------------------
def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _unreadable(tmp_path: Path) -> Path:
    """A file this process cannot read: mode 000 for a user, and for root (whom no mode stops)
    a symlink to a write-only kernel file that refuses to be opened for reading."""
    if os.geteuid() != 0:
        path = tmp_path / "noperm.xlsx"
        path.write_bytes(b"PK")
        path.chmod(0)
        return path
    target = Path("/proc/sys/vm/drop_caches")
    try:
        target.open("rb").close()
    except PermissionError:
        path = tmp_path / "noperm.xlsx"
        path.symlink_to(target)
        return path
    pytest.skip("no file that root cannot read on this machine")


@pytest.mark.integration
def test_an_unreadable_argument_is_a_failed_file_and_the_others_are_ingested(tmp_path):
    noperm = _unreadable(tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    broken = tmp_path / "broken.xlsx"
    broken.symlink_to(tmp_path / "gone.xlsx")
    eio = tmp_path / "eio.xlsx"
    eio.symlink_to("/proc/self/mem")  # the reading process's memory: EIO at offset 0
    pipe = tmp_path / "pipe.xlsx"
    os.mkfifo(pipe)  # its read would wait for a writer forever
    other = tmp_path / "other.xlsx"
    other.write_bytes(workbook([("S", worksheet(rows_xml({
        1: [cell("A1", "Item"), cell("B1", "Value")],
        **{r: [cell(f"A{r}", f"item {r}"), cell(f"B{r}", None, value=str(r))]
           for r in range(2, 6)}})))]))
    out = run_cli("ingest", str(noperm), str(folder), str(broken), str(eio), str(pipe),
                  str(other), "--data-dir", str(tmp_path / "data"), "--until", "rendered_chunks",
                  timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = {line.split()[1]: line for line in out.stdout.splitlines()}
    assert lines[str(other)].startswith("success"), out.stdout
    assert lines[str(noperm)].startswith("failed") and "Permission denied" in lines[str(noperm)]
    assert lines[str(broken)].startswith("failed") and "No such file" in lines[str(broken)]
    assert lines[str(eio)].startswith("failed") and "Input/output error" in lines[str(eio)]
    assert lines[str(folder)].startswith("failed") and f"{folder}/*.xlsx" in lines[str(folder)]
    assert lines[str(pipe)].startswith("failed") and "not a regular file" in lines[str(pipe)]


@pytest.mark.integration
def test_search_finds_a_url_as_written_and_prints_bidi_names_escaped(tmp_path):
    paths = []
    for build in (live_links, bidi_names):
        name, data = build(0.005)
        paths.append(tmp_path / name)
        paths[-1].write_bytes(data)
    data_dir = str(tmp_path / "data")
    out = run_cli("ingest", *map(str, paths), "--data-dir", data_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    found = run_cli("search", "attacker.example leak", "--mode", "text", "--data-dir", data_dir)
    assert "http://attacker.example/?leak=session-token" in found.stdout, found.stdout
    found = run_cli("search", "Amount", "--mode", "text", "--data-dir", data_dir)
    assert "rtl\\u202eexe.txt" in found.stdout, found.stdout
    assert not re.search("[\u200e\u200f\u202a-\u202e\u2066-\u2069]", found.stdout)
