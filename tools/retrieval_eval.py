"""Measure retrieval: do questions about one table cell find a unit that holds the cell?

Usage::

    python -m tools.retrieval_eval [--seeds N] [--labelled DIR] [--per-table N]

Three question sets (``--sets``), each indexed on its own (every workbook of the set through
the real stages, ``chunk_embeddings`` included, into a LanceDB table in a temp dir, as an
ingest writes it):

* **generated** — the workbooks of :func:`tools.evaluate.generate_layout` for seeds
  ``0 .. N-1`` (file ``layout_<seed>.xlsx``), their truth giving each table's range, header row
  count, flattened column headers and title;
* **labelled** — the DECO workbooks of the labelled dev set (``$EXTRACTION_ASSETS_LABELLED``,
  default ``<repo>/../shared/labelled``; skipped when absent): each table's ``Header`` labels give
  a column's header (the header cells above a data cell, top to bottom), its ``Data`` labels the
  cells asked for, and the nearest ``MetaTitle`` above it the title;
* **hitab** — the HiTab files of the labelled dev set and people's questions about them,
  beside the naive baselines (:mod:`tools.retrieval_hitab`, its own measures).

A question asks for one data cell by its column header, its row's key and, where there is one,
the table's title: ``"<header> of <key> in <title>"`` (header levels joined by spaces). A row's
key is the display text of the table's key column: of its first three columns, the one whose
data rows hold the most distinct texts (not plain numbers; at least 80 % of the rows that are
not empty filled). Only rows whose key is unique in the table are asked about, and only
questions whose text asks for no other cell of the set; at most ``--per-table`` of them per
table, picked by a generator seeded with the table's first question. Display texts are those of
the ``normalized_grids`` stage (number formats applied, merged values filled), what a person
reading the sheet sees.

Questions are asked as ``search`` asks them (:class:`~extraction_assets.search.retrieval.Searcher`:
chunks ranked by their best unit). A **hit** is a returned chunk of the right file and sheet
whose A1 ranges cover the cell. For each set, unit choice (chunks ranked by their own text only
— ``chunk``, by their records only — ``record``, or by both — ``both``, what ``search`` does)
and search mode (``hybrid``, ``vector``, ``text``) the run prints hit@1, hit@5 and the mean
reciprocal rank of the first hit within the top 10 (MRR@10).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from extraction_assets.core.a1 import parse_range
from extraction_assets.search.vectors import MODES
from tools.labelled import ANNOTATION_SHEETS
from tools.paths import shared_dir
from tools.retrieval_hitab import evaluate_hitab_search, format_hitab_search

#: results looked at per question (the MRR cut-off)
DEPTH = 10
#: the unit kinds searched: (label, kinds), in the order they are printed
UNIT_CHOICES = (("chunk", ("chunk",)), ("record", ("record",)), ("both", None))
#: the question sets, in the order they are built and printed
SETS = ("generated", "labelled", "hitab")
_NUMBER = re.compile(r"^[-+]?[()$¥€£%円\s\d.,]+$")
_KEY_COLUMNS = 3
_KEY_FILLED = 0.8


@dataclass(frozen=True)
class Question:
    """One question: ask ``text``, expect a unit of ``filename``/``sheet`` covering the cell
    at 1-based ``row``, ``col``."""

    filename: str
    sheet: str
    row: int
    col: int
    text: str


def _key_column(rows: list[int], cols: list[int], text: dict) -> int | None:
    """The key column of a table's data ``rows`` among ``cols`` (see the module docstring)."""
    rows = [row for row in rows if any(text.get((row, col)) for col in cols)]  # not empty
    best = None
    for col in cols[:_KEY_COLUMNS]:
        keys = [text.get((row, col), "") for row in rows]
        keys = [k for k in keys if k and not _NUMBER.match(k)]
        if rows and len(keys) >= _KEY_FILLED * len(rows) and (
                best is None or len(set(keys)) > best[0]):
            best = (len(set(keys)), col)
    return None if best is None else best[1]


def table_questions(filename: str, sheet: str, cells: dict[int, list[int]],
                    header_of: dict[int, str], title: str | None,
                    text: dict) -> list[Question]:
    """Every question about one table: ``cells`` maps each data row to the columns that may be
    asked for, ``header_of`` a column to its header, ``text`` (row, col) to a cell's display
    text on the sheet."""
    rows = sorted(cells)
    cols = sorted({c for row_cols in cells.values() for c in row_cols} | set(header_of))
    key_col = _key_column(rows, cols, text)
    if key_col is None:
        return []
    keys = Counter(text.get((row, key_col), "") for row in rows)
    return [Question(filename, sheet, row, col, f"{header_of[col]} of {text[(row, key_col)]}"
                     + (f" in {title}" if title else ""))
            for row in rows
            if text.get((row, key_col)) and keys[text[(row, key_col)]] == 1
            and not _NUMBER.match(text[(row, key_col)])
            for col in cells[row]
            if col != key_col and text.get((row, col)) and header_of.get(col)]


def sample_questions(tables: list[list[Question]], per_table: int) -> list[Question]:
    """At most ``per_table`` questions of each table of a set, picked by a generator seeded
    with the table's file, sheet and first question, among those whose text asks for no other
    cell of the set (a question with two answers cannot be scored)."""
    seen = Counter(q.text for questions in tables for q in questions)
    out = []
    for questions in tables:
        unique = [q for q in questions if seen[q.text] == 1]
        if unique:
            first = unique[0]
            rng = random.Random(f"{first.filename}|{first.sheet}|{first.row}|{first.col}")
            out += sorted(rng.sample(unique, min(per_table, len(unique))),
                          key=lambda q: (q.row, q.col))
    return out


def generated_questions(filename: str, truth: list[dict],
                        text: dict[str, dict]) -> list[list[Question]]:
    """The questions about each table of one generated workbook (``truth`` of
    :func:`~tools.evaluate.generate_layout`; ``text`` by sheet name maps (row, col)
    to display text). The totals row is not asked about."""
    out = []
    for t in truth:
        if t["kind"] != "table":
            continue
        r1, _, r2, _ = parse_range(t["range"])
        last = r2 - ("totals_row" in t["features"])
        header_of = {col: header.replace(" > ", " ")
                     for col, header in zip(t["columns"], t["headers"])}
        cells = {row: list(t["columns"]) for row in range(r1 + t["header_rows"], last + 1)}
        out.append(table_questions(filename, t["sheet"], cells, header_of, t["title"],
                                   text[t["sheet"]]))
    return out


def _cells_of(ranges: list[str]) -> set[tuple[int, int]]:
    out = set()
    for rng in ranges:
        r1, c1, r2, c2 = parse_range(rng)
        out |= {(r, c) for r in range(r1, r2 + 1) for c in range(c1, c2 + 1)}
    return out


def _joined(cells, text: dict) -> str:
    """The distinct non-empty display texts of ``cells`` in order, joined by spaces."""
    return " ".join(dict.fromkeys(text[cell].strip() for cell in cells
                                  if text.get(cell, "").strip()))


def labelled_questions(filename: str, sheets: dict,
                       text: dict[str, dict]) -> list[list[Question]]:
    """The questions about each labelled table of one DECO workbook (``sheets``: its entry's
    ``"sheets"`` in ``truth.json``; ``text`` as for :func:`generated_questions`)."""
    out = []
    for sheet, entry in sorted(sheets.items()):
        if sheet in ANNOTATION_SHEETS or sheet not in text:
            continue
        labels = entry.get("labels", [])
        titles = [parse_range(label["range"]) for label in labels if label["label"] == "MetaTitle"]
        for rng in entry.get("tables", []):
            top = parse_range(rng)[0]
            mine = [label for label in labels if label.get("table") == rng]
            data = _cells_of([label["range"] for label in mine if label["label"] == "Data"])
            heads = _cells_of([label["range"] for label in mine if label["label"] == "Header"])
            cells: dict[int, list[int]] = {}
            for row, col in sorted(data):
                cells.setdefault(row, []).append(col)
            first = min(cells, default=0)
            header_of = {col: _joined(sorted(h for h in heads if h[1] == col and h[0] < first),
                                      text[sheet]) for col in {c for _, c in data}}
            above = [t for t in titles if t[2] < top]
            title = None
            if above:
                r1, c1, r2, c2 = max(above, key=lambda t: (t[2], t[0], t[1]))
                title = _joined([(r, c) for r in range(r1, r2 + 1) for c in range(c1, c2 + 1)],
                                text[sheet]) or None
            out.append(table_questions(filename, sheet, cells, header_of, title, text[sheet]))
    return out


def _display_text(cells) -> dict[str, dict[tuple[int, int], str]]:
    """Display text by sheet name, then (row, col), of a ``cells`` table."""
    out: dict[str, dict] = {}
    for sheet, row, col, shown in zip(*(cells.column(name).to_pylist() for name in (
            "sheet_name", "row", "col", "display_text"))):
        if shown:
            out.setdefault(sheet, {})[(row, col)] = shown
    return out


def index_workbooks(root: Path, files: list[tuple[str, bytes]], embedder
                    ) -> dict[str, dict[str, dict]]:
    """Run the stages on each ``(filename, bytes)``, the ``chunk_embeddings`` stage writing
    its retrieval units to ``<root>/lancedb`` (chunk budget and merging as an ingest has them);
    returns each file's display texts (see :func:`_display_text`). A file that cannot be read
    is left out."""
    from extraction_assets.defs.assets.rendered_chunks import ChunkingConfig
    from extraction_assets.pipeline import StageError, run_pipeline
    from extraction_assets.search.retrieval import indexer
    from extraction_assets.search.vectors import VectorStore
    from extraction_assets.store.storage import DataStore

    store = VectorStore(DataStore(root).lancedb_uri)
    budget = ChunkingConfig()  # an ingest's defaults
    texts = {}
    for filename, data in files:
        try:
            tables = run_pipeline(data, filename=filename, until="chunk_embeddings",
                                  index_units=indexer(store, embedder),
                                  count_tokens=embedder.count_tokens,
                                  count_tokens_batch=embedder.count_tokens_batch,
                                  max_tokens=budget.max_tokens, min_tokens=budget.min_tokens)
        except StageError as exc:
            print(f"  skipped {filename}: {exc}", file=sys.stderr)
            continue
        texts[filename] = _display_text(tables["cells"])
    store.optimize()
    return texts


def _covers(hit: dict, q: Question) -> bool:
    if hit["filename"] != q.filename or hit["sheet"] != q.sheet:
        return False
    for rng in hit["a1_ranges"]:
        r1, c1, r2, c2 = parse_range(rng)
        if r1 <= q.row <= r2 and c1 <= q.col <= c2:
            return True
    return False


def score(questions: list[Question], searcher, mode: str, kinds=None) -> dict:
    """hit@1, hit@5 and MRR@10 of ``questions`` searched by ``searcher`` (a
    :class:`~extraction_assets.search.retrieval.Searcher`) in ``mode``, among units of ``kinds``
    (all when ``None``); ``seconds`` is the mean time per query, ``misses`` the questions with
    no hit in the top 5."""
    ranks, misses, started = [], [], time.perf_counter()
    for q in questions:
        hits = searcher.search(q.text, k=DEPTH, mode=mode, kinds=kinds)
        rank = next((i for i, hit in enumerate(hits, start=1) if _covers(hit, q)), None)
        ranks.append(rank)
        if rank is None or rank > 5:
            misses.append(q)
    n = max(1, len(questions))
    return {"questions": len(questions),
            "hit@1": sum(r == 1 for r in ranks) / n,
            "hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r) / n,
            "seconds": (time.perf_counter() - started) / n, "misses": misses}


def generated_set(seeds: int, per_table: int, root: Path, embedder) -> list[Question]:
    """Index the generated workbooks of seeds ``0 .. seeds-1`` under ``root`` and return
    their questions."""
    from tools.evaluate import generate_layout

    layouts = {f"layout_{seed:03d}.xlsx": generate_layout(seed) for seed in range(seeds)}
    texts = index_workbooks(root, [(name, data) for name, (data, _) in layouts.items()],
                            embedder)
    return sample_questions([table for name, (_, truth) in layouts.items() if name in texts
                             for table in generated_questions(name, truth, texts[name])],
                            per_table)


def labelled_set(labelled: Path, per_table: int, root: Path, embedder) -> list[Question]:
    """Index the DECO workbooks of the labelled dev set under ``root`` and return their
    questions."""
    truth = json.loads((labelled / "deco" / "truth.json").read_text(encoding="utf-8"))
    files = [(name, (labelled / "deco" / "files" / name).read_bytes()) for name in sorted(truth)]
    texts = index_workbooks(root, files, embedder)
    return sample_questions([table for name in sorted(truth) if name in texts
                             for table in labelled_questions(name, truth[name]["sheets"],
                                                             texts[name])], per_table)


def evaluate(seeds: int = 40, labelled: Path | None = None, per_table: int = 3,
             work_dir: Path | None = None, embedder=None, sets: tuple[str, ...] = SETS
             ) -> dict[str, dict]:
    """Build the indexes of ``sets`` (in ``work_dir``, default a temp dir) and score them:
    ``generated`` and ``labelled`` (DECO) give ``{set: {"questions": [...], "scores":
    {(units, mode): score}}}`` for every unit choice and mode; ``hitab`` gives ``{"hitab":
    {system: aggregate}}``, ours in every mode beside the naive baselines
    (:func:`tools.retrieval_hitab.evaluate_hitab_search`). A labelled set is left out when its
    folder is absent."""
    from extraction_assets.search.embedding import LocalEmbedder
    from extraction_assets.search.retrieval import Searcher

    embedder = embedder or LocalEmbedder()
    labelled = shared_dir("labelled", labelled)
    with tempfile.TemporaryDirectory(prefix="retrieval-eval-", dir=work_dir) as tmp:
        built = {}
        if seeds > 0 and "generated" in sets:
            built["generated"] = generated_set(seeds, per_table, Path(tmp) / "generated",
                                               embedder)
        if (labelled / "deco" / "truth.json").is_file() and "labelled" in sets:
            built["labelled"] = labelled_set(labelled, per_table, Path(tmp) / "labelled",
                                             embedder)
        out = {}
        for name, questions in built.items():
            searcher = Searcher(Path(tmp) / name, embedder)
            out[name] = {"questions": questions, "scores": {
                (units, mode): score(questions, searcher, mode, kinds)
                for units, kinds in UNIT_CHOICES for mode in MODES}}
        if "hitab" in sets:
            hitab = evaluate_hitab_search(labelled, Path(tmp) / "hitab", embedder, MODES)
            if hitab:
                out["hitab"] = hitab
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: print hit@1, hit@5 and MRR per set, unit choice and mode, then the
    hybrid misses of the indexed units; ``--json OUT`` writes the figures as JSON. Returns the
    exit code (0)."""
    ap = argparse.ArgumentParser(description="Score retrieval on questions about table cells.")
    ap.add_argument("--seeds", type=int, default=40, help="generated layouts (default 40)")
    ap.add_argument("--labelled", default=None, help="labelled dev set dir (default "
                    "$EXTRACTION_ASSETS_LABELLED or ../shared/labelled)")
    ap.add_argument("--per-table", type=int, default=3, help="questions per table (default 3)")
    ap.add_argument("--misses", type=int, default=10, help="hybrid misses to print per set")
    ap.add_argument("--json", dest="json_out", default=None, help="write the figures here")
    ap.add_argument("--sets", default=",".join(SETS),
                    help=f"question sets to run, comma-separated (default {','.join(SETS)})")
    args = ap.parse_args(argv)
    sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
    unknown = set(sets) - set(SETS)
    if unknown:
        ap.error(f"unknown set(s) {', '.join(sorted(unknown))}; choose from {', '.join(SETS)}")
    results = evaluate(args.seeds, args.labelled, args.per_table, sets=sets)
    hitab = results.pop("hitab", None)
    print(f"{'set':<10} {'units':<7} {'mode':<7} {'questions':>9} {'hit@1':>6} {'hit@5':>6} "
          f"{'MRR':>6} {'ms/query':>8}")
    for name, res in results.items():
        for (units, mode), s in res["scores"].items():
            print(f"{name:<10} {units:<7} {mode:<7} {s['questions']:>9} {s['hit@1']:>6.3f} "
                  f"{s['hit@5']:>6.3f} {s['mrr']:>6.3f} {s['seconds'] * 1000:>8.1f}")
    for name, res in results.items():
        misses = res["scores"][("both", "hybrid")]["misses"]
        for q in misses[:args.misses]:
            print(f"  miss [{name}] {q.filename} [{q.sheet}] R{q.row}C{q.col}: {q.text}")
    if hitab:
        print()
        print("\n".join(format_hitab_search(hitab)))
    if args.json_out:
        figures = {name: [{"units": u, "mode": m, **{k: v for k, v in s.items() if k != "misses"}}
                          for (u, m), s in res["scores"].items()]
                   for name, res in results.items()}
        if hitab:
            figures["hitab"] = hitab
        Path(args.json_out).write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
