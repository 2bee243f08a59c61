"""HiTab search measures, ours beside the naive baselines, in one run.

The HiTab set of the labelled dev set (``<labelled>/hitab``: StatCan tables, one sheet each, and
the questions people wrote about them, see its README) measures whether a person's question
finds the right file and the right row. Its 25 files are indexed alone (every stage, as
:func:`tools.retrieval_eval.index_workbooks` does) and each question is asked as ``search``
asks it (:class:`~extraction_assets.search.retrieval.Searcher`, the top :data:`K` results).

Measures (the labelled README's, k = 5; each over the questions it applies to):

* **table@k** — a result within the first k is from the question's file (all questions);
* **row@k** — the row a result says matched (its record's A1 range) is a gold row, in a result
  of the right file within the first k (questions with gold cells or rows; ours only: a
  baseline's block names no row);
* **cell-line@k** — a result of the right file within the first k holds, on one line of its
  text (the chunk's lines and the matched record's text), a gold value and that value's row
  label (questions with gold cells or rows; numbers compared as numbers, ``1,091.0`` = 1091);
* **MRR** — the reciprocal rank of the first result from the right file, 0 past k.

The naive baselines (:func:`pandas_blocks`, :func:`docling_blocks`) are what a user would do
without us, as ``../shared/labelled/README.md`` defines them: 30-line blocks of each sheet's
rows, ranked by ``rank_bm25.BM25Okapi`` over lower-cased word tokens. The Docling baseline needs
Docling's spreadsheet backend (``pip install -e ".[tools]"``); without it, it is skipped with a
note. Every measure is reported over all questions and per fold group (:mod:`tools.folds`): the
held-apart folds are the figures that show whether a ranking rule generalises.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from extraction_assets.core.a1 import parse_range
from tools.folds import fold_of, fold_subsets

#: results looked at per question
K = 5
#: lines of a baseline block
BLOCK_LINES = 30
#: the measures, in report order; the row measures apply to ours only
MEASURES = ("table@1", "table@5", "row@1", "row@5", "cell-line@1", "cell-line@5", "mrr")
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class HitabQuestion:
    """One question of ``questions.jsonl``: ``text`` about ``file`` (its ``fold``), gold sheet
    ``rows`` (1-based; empty when only the table is known) and ``pairs`` of (gold value, its
    row label)."""

    qid: str
    file: str
    text: str
    fold: int
    rows: frozenset[int]
    pairs: tuple[tuple[float | str, str], ...]


@dataclass(frozen=True)
class Result:
    """One result as the measures see it: its ``filename``, the ``lines`` of its text and the
    sheet ``rows`` it says matched (1-based; empty when it names none, ``None`` when the system
    never names rows: a baseline's block)."""

    filename: str
    lines: tuple[str, ...]
    rows: frozenset[int] | None = None


def _number(value) -> float | str:
    """``value`` as a float when it reads as a number (``'1,091.0'`` -> 1091.0), else its
    whitespace-collapsed, lower-cased text."""
    text = str(value).strip()
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return " ".join(text.split()).lower()


def hitab_questions(root: Path) -> list[HitabQuestion]:
    """The questions of ``root/hitab/questions.jsonl`` (``root`` the labelled dev set)."""
    out = []
    for line in (root / "hitab" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        gold = q["gold"]
        pairs = [(_number(c.get("value_text", c["value"])), c["row_label"])
                 for c in gold.get("cells", [])]
        pairs += [(_number(v), r["row_label"]) for r in gold.get("rows", []) for v in r["values"]]
        rows = {c["row"] for c in gold.get("cells", [])} | {r["row"] for r in gold.get("rows", [])}
        out.append(HitabQuestion(q["qid"], q["file"], q["question"], fold_of(q["file"]),
                                 frozenset(rows), tuple((v, " ".join(str(lab).split()).lower())
                                                        for v, lab in pairs if lab)))
    return out


def line_holds(line: str, pairs: Iterable[tuple[float | str, str]]) -> bool:
    """Whether one text ``line`` holds a gold value and its row label (see the module
    docstring): numbers compared as numbers, texts as lower-cased, whitespace-collapsed
    substrings and labels as such whole words."""
    flat = " ".join(line.split()).lower()
    numbers = None
    for value, label in pairs:
        if not re.search(rf"(?<!\w){re.escape(label)}(?!\w)", flat):  # "men" is not in "women"
            continue
        if isinstance(value, str):
            if value in flat:
                return True
            continue
        if numbers is None:
            numbers = {float(n.replace(",", "")) for n in _NUMBER.findall(flat)}
        if value in numbers:
            return True
    return False


def question_scores(q: HitabQuestion, results: list[Result]) -> dict[str, float | None]:
    """The measures of one question's ``results`` (best first); ``None`` where a measure does
    not apply to the question."""
    right = [r.filename == q.file for r in results[:K]]
    first = next((i for i, ok in enumerate(right, start=1) if ok), None)
    out: dict[str, float | None] = {"table@1": float(bool(right[:1] and right[0])),
                                    "table@5": float(first is not None),
                                    "mrr": 1 / first if first else 0.0}
    for k in (1, 5):
        top = [r for r, ok in zip(results[:k], right) if ok]
        names_rows = any(r.rows is not None for r in results)
        out[f"row@{k}"] = (float(any(r.rows & q.rows for r in top if r.rows))
                           if q.rows and names_rows else None)
        out[f"cell-line@{k}"] = (float(any(line_holds(line, q.pairs)
                                           for r in top for line in r.lines))
                                 if q.pairs else None)
    return out


def aggregate(questions: list[HitabQuestion], scores: list[dict]) -> dict[str, dict]:
    """Mean of each measure over the questions it applies to, for all questions and each fold
    subset (:func:`tools.folds.fold_subsets`): ``{subset: {measure: mean | None, "n":
    questions}}``."""
    subsets = {"all": None, **fold_subsets()}
    out = {}
    for name, folds in subsets.items():
        chosen = [s for q, s in zip(questions, scores) if folds is None or q.fold in folds]
        row = {"n": len(chosen)}
        for m in MEASURES:
            values = [s[m] for s in chosen if s.get(m) is not None]
            row[m] = sum(values) / len(values) if values else None
        out[name] = row
    return out


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _blocks(filename: str, lines: list[str]) -> list[Result]:
    return [Result(filename, tuple(lines[i:i + BLOCK_LINES]))
            for i in range(0, len(lines), BLOCK_LINES)]


def pandas_blocks(filename: str, data: bytes) -> list[Result]:
    """The pandas baseline's blocks of one workbook: each sheet read by
    ``pandas.read_excel(header=None)``, its first non-empty row the header, each later
    non-empty row one line ``header: value; …`` (empty cells left out), 30 lines a block."""
    import pandas as pd

    out = []
    for frame in pd.read_excel(io.BytesIO(data), header=None, sheet_name=None,
                               dtype=str).values():
        rows = [["" if pd.isna(v) else str(v).strip() for v in row]
                for row in frame.values.tolist()]
        rows = [row for row in rows if any(row)]
        if not rows:
            continue
        header = rows[0]
        out += _blocks(filename, ["; ".join(f"{h}: {v}" for h, v in zip(header, row) if v)
                                  for row in rows[1:]])
    return out


def docling_available() -> bool:
    """Whether Docling's spreadsheet backend can be imported (the ``tools`` extra)."""
    try:
        import docling.backend.msexcel_backend  # noqa: F401
    except ImportError:
        return False
    return True


def docling_blocks(filename: str, data: bytes) -> list[Result]:
    """The Docling baseline's blocks of one workbook: Docling's Markdown export of it (its
    spreadsheet backend, no models), non-empty lines, 30 lines a block."""
    import logging

    from tools.bench.measure import docling_markdown

    logging.getLogger("docling").setLevel(logging.ERROR)
    markdown = docling_markdown(data, filename)
    return _blocks(filename, [line for line in markdown.splitlines() if line.strip()])


def bm25_ranker(blocks: list[Result]) -> Callable[[str], list[Result]]:
    """A BM25 ranking (``rank_bm25.BM25Okapi``, lower-cased word tokens) of ``blocks``: a
    function from a question to its top :data:`K` blocks (ties in block order)."""
    from rank_bm25 import BM25Okapi

    bm25 = BM25Okapi([_tokens("\n".join(b.lines)) for b in blocks])

    def rank(question: str) -> list[Result]:
        scores = bm25.get_scores(_tokens(question))
        return [blocks[i] for i in sorted(range(len(blocks)), key=lambda i: -scores[i])[:K]]
    return rank


def our_results(hits: list[dict]) -> list[Result]:
    """``Searcher.search`` hits as :class:`Result`: the chunk's lines and the matched record's
    text; the record's rows."""
    out = []
    for hit in hits:
        record = hit.get("record")
        rows = frozenset()
        lines = hit["text"].splitlines()
        if record:
            r1, _, r2, _ = parse_range(record["a1_range"])
            rows = frozenset(range(r1, r2 + 1))
            lines.append(record["text"])
        out.append(Result(hit["filename"], tuple(lines), rows))
    return out


def evaluate_hitab_search(labelled: Path, root: Path, embedder, modes: Iterable[str]
                          ) -> dict[str, dict]:
    """Index the HiTab files under ``root`` and score ours (each of ``modes``) and the
    baselines on its questions: ``{system: aggregate}`` (see :func:`aggregate`), systems
    ``ours <mode>``, ``pandas+BM25`` and ``Docling+BM25`` (when Docling is installed).
    ``{}`` when ``labelled/hitab/questions.jsonl`` is absent."""
    from extraction_assets.search.retrieval import Searcher
    from tools.retrieval_eval import index_workbooks

    if not (labelled / "hitab" / "questions.jsonl").is_file():
        return {}
    questions = hitab_questions(labelled)
    files = [(p.name, p.read_bytes())
             for p in sorted((labelled / "hitab" / "files").glob("*.xlsx"))]
    index_workbooks(root, files, embedder)
    searcher = Searcher(root, embedder)
    out = {}
    for mode in modes:
        out[f"ours {mode}"] = aggregate(questions, [
            question_scores(q, our_results(searcher.search(q.text, k=K, mode=mode)))
            for q in questions])
    baselines = {"pandas+BM25": pandas_blocks}
    if docling_available():
        baselines["Docling+BM25"] = docling_blocks
    else:
        print("  Docling+BM25 baseline skipped: Docling's spreadsheet backend is not "
              "installed (pip install -e '.[tools]')", file=sys.stderr)
    for name, make in baselines.items():
        rank = bm25_ranker([b for filename, data in files for b in make(filename, data)])
        out[name] = aggregate(questions, [question_scores(q, rank(q.text)) for q in questions])
    return out


def format_hitab_search(res: dict[str, dict], subsets: Iterable[str] = ("all", "held_apart")
                        ) -> list[str]:
    """Report lines: each system's measures per subset, then, per subset, ours (hybrid) minus
    the best baseline of each measure."""
    lines = [f"{'hitab':<14} {'subset':<10} {'n':>3} " + " ".join(f"{m:>11}" for m in MEASURES)]
    for subset in subsets:
        for name, agg in res.items():
            row = agg[subset]
            lines.append(f"{name:<14} {subset:<10} {row['n']:>3} " + " ".join(
                f"{'—' if row[m] is None else format(row[m], '.3f'):>11}" for m in MEASURES))
        ours = res.get("ours hybrid", {}).get(subset)
        bases = [agg[subset] for name, agg in res.items() if not name.startswith("ours")]
        if ours and bases:
            cells = []
            for m in MEASURES:
                best = [b[m] for b in bases if b[m] is not None]
                cells.append("—" if not best or ours[m] is None
                             else format(ours[m] - max(best), "+.3f"))
            lines.append(f"{'ours - best':<14} {subset:<10} {'':>3} "
                         + " ".join(f"{c:>11}" for c in cells))
    return lines
