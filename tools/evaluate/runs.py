"""Runs of the evaluation: the generated layouts, the corpus ground truth and the labelled sets
scored in one report (:func:`main`, ``python -m tools.evaluate``)."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from tools.evaluate.generate import generate_layout
from tools.evaluate.score import diagnose, predict, score
from tools.evaluate.truth import corpus_truth
from tools.folds import LOOK_FOLDS
from tools.labelled import (
    evaluate_hitab,
    evaluate_labelled,
    format_folds,
    format_hitab,
    format_scores,
)
from tools.paths import shared_dir


# -- runs ---------------------------------------------------------------------------------------
def evaluate_generator(n: int = 200, start: int = 0) -> dict:
    """Generate layouts ``start … start+n-1``, predict, and return ``{"scores": score(...),
    "failures": diagnose(...), "forms": {"scores": ..., "failures": ...}, "truth": [...],
    "predicted": [...], "seconds": float}``: ``scores``/``failures`` for the tables, ``forms``
    the same for the ``key_value`` blocks."""
    t0 = time.perf_counter()
    truth, pred = [], []
    for seed in range(start, start + n):
        data, tr = generate_layout(seed)
        truth.extend(tr)
        pred.extend(predict(data, doc=f"seed:{seed}"))
    forms = {"scores": score(pred, truth, kind="key_value"),
             "failures": diagnose(pred, truth, kind="key_value")}
    return {"scores": score(pred, truth), "failures": diagnose(pred, truth), "forms": forms,
            "truth": truth, "predicted": pred, "seconds": time.perf_counter() - t0}


def evaluate_corpus(corpus: Path | None = None) -> dict[str, dict]:
    """Score every corpus ground-truth source; ``{source: {"scores", "failures", "files",
    "errors"}}``."""
    corpus = shared_dir("corpus", corpus)
    out = {}
    for source, files in corpus_truth(corpus).items():
        truth, pred, errors = [], [], []
        for rel, tr in files.items():
            for t in tr:
                t["doc"] = rel
            truth.extend(tr)
            try:
                pred.extend(predict((corpus / rel).read_bytes(), doc=rel))
            except Exception as exc:  # noqa: BLE001 - unreadable formats count as misses
                errors.append(f"{rel}: {type(exc).__name__}: {exc}")
        out[source] = {"scores": score(pred, truth), "failures": diagnose(pred, truth),
                       "files": len(files), "errors": errors}
    return out


def _fmt_scores(name: str, s: dict) -> str:
    header = (f"{s['header_accuracy']:.3f} ({s['header_correct']}/{s['header_columns']})"
              if s["header_columns"] else "-")
    rows = f"{s['header_rows_accuracy']:.3f}" if s["header_rows_tables"] else "-"
    return (f"{name:<24} {s['n_truth']:>5} {s['n_pred']:>5}  "
            f"{s['exact_precision']:.3f} {s['exact_recall']:.3f} {s['exact_f1']:.3f}   "
            f"{s['iou_precision']:.3f} {s['iou_recall']:.3f} {s['iou_f1']:.3f}   "
            f"{header:<18}  {rows}")


def _worst_first(fails: list[dict]) -> list[dict]:
    """Failures of the files with most failures first (a file's in their own order)."""
    per_doc = Counter(f["doc"] for f in fails)
    return sorted(fails, key=lambda f: (-per_doc[f["doc"]], f["doc"]))


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: print scores for the generator's tables, its forms (``key_value``
    ranges), the corpus and the labelled sets (DECO and Tasi tables, HiTab header and row
    paths; each whole and by fold, :mod:`tools.folds`), failure kinds and the worst examples —
    of the labelled sets only their look folds' unless ``--show-held-apart``; ``--json OUT``
    also writes everything as JSON (the forms under ``generator.forms``, the labelled sets
    under ``labelled``, with the same failures left out). Returns the exit code (0)."""
    ap = argparse.ArgumentParser(description="Score table segmentation against labelled workbooks.")
    ap.add_argument("--seeds", type=int, default=200, help="generated layouts (default 200)")
    ap.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--corpus", default=None, help="shared corpus dir (default "
                    "$EXTRACTION_ASSETS_CORPUS or ../shared/corpus)")
    ap.add_argument("--labelled", default=None, help="human-labelled sets dir (default "
                    "$EXTRACTION_ASSETS_LABELLED or ../shared/labelled)")
    ap.add_argument("--json", dest="json_out", default=None, help="write results as JSON here")
    ap.add_argument("--worst", type=int, default=15, help="worst examples to print")
    ap.add_argument("--show-held-apart", action="store_true",
                    help="also list (and write to --json) the failures of the labelled sets' "
                    "held-apart folds (see tools.folds); by default only the look folds'")
    args = ap.parse_args(argv)

    results: dict = {}
    if args.seeds > 0:
        results["generator"] = evaluate_generator(args.seeds, args.start)
    corpus = shared_dir("corpus", args.corpus)
    if corpus.is_dir():
        results.update(evaluate_corpus(corpus))
    label_sets = []  # (label, {"scores", "failures", ...})
    for name, res in results.items():
        if name == "generator":
            label_sets += [(f"generator ({args.seeds})", res),
                           (f"generator forms ({args.seeds})", res["forms"])]
        else:
            label_sets.append((name, res))
    print(f"{'label set':<24} {'truth':>5} {'pred':>5}  exact P/R/F1          "
          f"IoU>=0.8 P/R/F1        header acc          hdr-rows")
    for label, res in label_sets:
        print(_fmt_scores(label, res["scores"]))
    for label, res in label_sets:
        kinds = Counter(k for f in res["failures"] for k in f["kinds"])
        if kinds:
            print(f"\nfailure kinds — {label}:")
            for k, n in kinds.most_common():
                print(f"  {n:>5}  {k}")
        for e in res.get("errors", []):
            print(f"  error: {e}")
    for label, res in label_sets:
        fails = res["failures"]
        if not fails or args.worst <= 0:
            continue
        per_doc = Counter(f["doc"] for f in fails)
        print(f"\nworst examples — {label}:")
        shown = 0
        for doc, _ in per_doc.most_common():
            for f in (f for f in fails if f["doc"] == doc):
                if shown >= args.worst:
                    break
                print(f"  {doc or '-'} [{f['sheet']}] expected {f['expected']} predicted "
                      f"{', '.join(f['predicted']) or '-'}: {', '.join(f['kinds'])}"
                      + (f" ({f['detail']})" if f['detail'] else "")
                      + (f"  features={','.join(f['features'])}" if f['features'] else ""))
                shown += 1
    labelled = evaluate_labelled(shared_dir("labelled", args.labelled))
    hitab = evaluate_hitab(shared_dir("labelled", args.labelled))
    if hitab:
        labelled["hitab"] = hitab
    for name, res in labelled.items():
        hidden = 0
        if not args.show_held_apart:
            hidden = sum(f["fold"] not in LOOK_FOLDS for f in res["failures"])
            res["failures"] = [f for f in res["failures"] if f["fold"] in LOOK_FOLDS]
        print()
        if name == "hitab":
            print("\n".join(format_hitab(res)))
        else:
            print("\n".join(format_scores(f"labelled {name} ({res['files']} files)",
                                         res["scores"])))
            print("\n".join(format_folds(res)))
        for e in res["errors"]:
            print(f"  error: {e}")
        if args.worst > 0 and res["failures"]:
            print(f"  worst examples ({'all folds' if args.show_held_apart else 'look folds'}"
                  + (f"; {hidden} on held-apart folds not shown" if hidden else "") + "):")
        shown = res["failures"] if name != "hitab" else _worst_first(res["failures"])
        for f in shown[:max(args.worst, 0)]:
            if name == "hitab":
                print(f"    {f['doc']} {f['what']} {f['where']}: expected "
                      f"{' > '.join(f['expected'])} predicted "
                      + ("-" if f["predicted"] is None else ' > '.join(f["predicted"]) or "[]")
                      + ("" if f.get("record", True) else " (no record)"))
            else:
                print(f"    {f['doc']} [{f['sheet']}] expected {f['expected'] or '-'} predicted "
                      f"{', '.join(f['predicted']) or '-'}: {f['what']}")
    results["labelled"] = labelled
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str),
                                       encoding="utf-8")
    return 0

