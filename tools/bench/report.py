"""What the benchmark prints and judges: the tables of its results and the issues' targets it
measured (:func:`targets`); :mod:`.main` runs the measurements."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from tools.bench.workbooks import GENERATED

console = Console(width=None if sys.stdout.isatty() else 160)


def targets(results: dict) -> list[dict]:
    """The targets of issues #8 and #25 that this run measured: name, measured value, limit,
    met."""
    out = []
    files = {f["file"]: f for f in results["files"]}

    def add(name: str, value, limit: str, met: bool) -> None:
        out.append({"target": name, "measured": value, "limit": limit, "met": met})

    one_m = files.get(f"{GENERATED['1m'].name}.xlsx")
    if one_m:
        add("1M cells: hash -> chunks / calamine read", one_m["ratio_ours_to_calamine"], "<= 5",
            one_m["ratio_ours_to_calamine"] <= 5)
        peak = one_m["hash_to_chunks"]["peak_rss_mb"]
        if peak is not None:
            add("1M cells: peak RSS MB, hash -> chunks", peak, "<= 800", peak <= 800)
    two_k = files.get(f"{GENERATED['200k'].name}.xlsx")
    if two_k and "ratio_docling_to_ours" in two_k:
        add("200k cells: Docling / ours", two_k["ratio_docling_to_ours"], ">= 10",
            two_k["ratio_docling_to_ours"] >= 10)
    merged = files.get(f"{GENERATED['merged'].name}.xlsx")
    if merged:
        seconds = round(merged["stages"]["parse"]["seconds"]
                        + merged["stages"]["normalize"]["seconds"], 3)
        add("50,000 merged ranges: parse + normalize s", seconds, "<= 3", seconds <= 3)
    if results.get("dagster"):
        overhead = results["dagster"]["overhead_s"]
        add("Dagster overhead per partition s", overhead, "<= 3", overhead <= 3)
        rerun = results["dagster"]["rerun"]
        add("re-run: unchanged chunks re-embedded", rerun["embedded"], "== 0",
            rerun["embedded"] == 0)
    for command in results.get("commands", []):
        ours, name = command["ours"], command["file"]
        if name == f"{GENERATED['1m'].name}.xlsx" and command["until"] == "rendered_chunks":
            add("1M cells: ingest --until rendered_chunks / calamine read (issue #25)",
                ours["ratio_to_calamine"], "<= 6", ours["ratio_to_calamine"] <= 6)
            add("1M cells: ingest --until rendered_chunks, peak RSS MB (issue #25)",
                ours["peak_rss_mb"], "<= 800", ours["peak_rss_mb"] <= 800)
        if (name == f"{GENERATED['50k'].name}.xlsx" and command["until"] == "chunk_embeddings"
                and "speedup" in command):
            add("50k cells: ingest (six assets), baseline / ours (issue #25)",
                command["speedup"], ">= 2", command["speedup"] >= 2)
    if results.get("parallel", {}).get("files", 0) >= 8:  # the "8 files on 2 cores"
        p = results["parallel"]
        share = round(p["ratio"] / p["independent_ratio"], 2)
        add(f"parallel: --jobs {p['workers']} speed-up / independent processes'", share,
            ">= 0.9", share >= 0.9)
    if results.get("small", {}).get("files", 0) >= 200:  # issue #24's folder of reports
        ratio = results["small"]["ratio"]
        add(f"{results['small']['files']} small files: ingest / stages alone", ratio, "<= 2",
            ratio <= 2)
    return out


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _print_command(c: dict) -> None:
    """The table of one :func:`bench_command` result."""
    table = Table(title=f"ingest {c['file']} until {c['until']}, as a process on a fresh data "
                        f"dir (medians of {c['runs']}; calamine {c['calamine_s']:.3f} s, our "
                        f"stages alone {c['stages_s']:.3f} s)")
    versions = [name for name in ("ours", "baseline") if name in c]
    steps = list(c["ours"]["steps_s"])
    for col in ("code", "wall s", "x calamine", "peak MB", *steps, "outside steps s",
                "embedded units/s", "model tokens/s"):
        table.add_column(col, justify="left" if col == "code" else "right")
    for name in versions:
        v = c[name]
        embed = v.get("embed", {})
        table.add_row(name, _fmt(v["wall_s"]), _fmt(v["ratio_to_calamine"]),
                      _fmt(v["peak_rss_mb"]), *[_fmt(v["steps_s"].get(step)) for step in steps],
                      _fmt(v["outside_steps_s"]), _fmt(embed.get("units_per_s")),
                      _fmt(embed.get("model_tokens_per_s")))
    console.print(table)
    if "speedup" in c:
        console.print(f"  baseline ({c['baseline_python']}) / ours: x{c['speedup']:.2f}",
                      highlight=False)


def print_results(results: dict) -> None:
    """Rich tables of a run's results."""
    main = Table(title="Workbooks (median seconds; peak RSS MB)")
    for col in ("file", "cells", "records", "chunks", "calamine s", "openpyxl s", "docling s",
                "ours s (hash->chunks)", "ours/calamine", "docling/ours", "peak MB"):
        main.add_column(col, justify="left" if col == "file" else "right")
    for f in results["files"]:
        refs = f["references"]
        main.add_row(f["file"], _fmt(f["cells"]), _fmt(f["records"]), _fmt(f["chunks"]),
                     _fmt(refs["calamine"]["seconds"], 3), _fmt(refs["openpyxl"]["seconds"], 3),
                     _fmt(refs.get("docling", {}).get("seconds"), 3),
                     _fmt(f["hash_to_chunks"]["seconds"], 3),
                     _fmt(f["ratio_ours_to_calamine"]), _fmt(f.get("ratio_docling_to_ours")),
                     _fmt(f["hash_to_chunks"]["peak_rss_mb"]))
    if results["files"]:
        console.print(main)
    for f in results["files"]:
        expected = f["expected"]
        if expected and (f["cells"], f["records"]) != (expected["cells"], expected["data_rows"]):
            console.print(f"[red]{f['file']}: {f['cells']} cells and {f['records']} records "
                          f"counted, the generator wrote {expected['cells']} and "
                          f"{expected['data_rows']} rows[/]", highlight=False)
    stages = Table(title="Stages (median seconds, cells/s and records/s of the workbook, "
                         "process peak RSS MB while the stage ran)")
    for col in ("file", "stage", "s", "cells/s", "records/s", "rows out", "peak MB"):
        stages.add_column(col, justify="left" if col in ("file", "stage") else "right")
    for f in results["files"]:
        for name, s in f["stages"].items():
            stages.add_row(f["file"], name, _fmt(s["seconds"], 3), _fmt(s["cells_per_s"]),
                           _fmt(s["records_per_s"]), _fmt(s["rows"]), _fmt(s["peak_rss_mb"]))
        if "embed" in f:
            stages.add_row(f["file"], "embed chunks/s", _fmt(f["embed"]["chunks_per_s"]), "", "",
                           _fmt(f["embed"]["chunks"]), "")
            stages.add_row(f["file"], "embed tokens/s", _fmt(f["embed"]["tokens_per_s"]), "", "",
                           "", "")
    if results["files"]:
        console.print(stages)
    if results.get("dagster"):
        d = results["dagster"]
        console.print(
            f"[bold]Dagster[/] {d['file']}: run {d['wall_s']:.2f} s (steps {d['steps_s']:.2f} s), "
            f"stage work in-process {d['stage_work_s']:.2f} s, overhead {d['overhead_s']:.2f} s "
            f"per partition (a new data dir's first ingest {d['first_run_s']:.2f} s); forced "
            f"re-run {d['rerun']['wall_s']:.2f} s embedded "
            f"{d['rerun']['embedded']} of {d['chunks']} chunks, reused {d['rerun']['reused']}",
            highlight=False)
    for c in results.get("commands", []):
        _print_command(c)
    if results.get("parallel"):
        p = results["parallel"]
        console.print(
            f"[bold]Parallel[/] {p['files']} files x {p['cells_per_file']:,} cells until "
            f"{p['until']}: --jobs 1 {p['serial_s']:.2f} s, --jobs {p['workers']} "
            f"{p['parallel_s']:.2f} s, throughput x{p['ratio']:.2f}; reference: {p['workers']} "
            f"independent --jobs 1 ingests on data dirs of their own {p['independent_s']:.2f} s, "
            f"x{p['independent_ratio']:.2f} (what this machine gives to processes that share "
            "nothing)", highlight=False)
        console.print(
            f"  where the time goes: the first run starts {p['serial_first_run_s']:.2f} s "
            f"after the command with --jobs 1, {p['parallel_first_run_s']:.2f} s with --jobs "
            f"{p['workers']}; a run takes {p['serial_run_s']:.2f} s alone, "
            f"{p['parallel_run_s']:.2f} s side by side "
            f"(x{p['parallel_run_s'] / p['serial_run_s']:.2f})", highlight=False)
        console.print(
            f"  bound (Amdahl: the seconds before the first run are not shared): "
            f"x{p['bound_ratio']:.2f} with the runs as slow as side by side, "
            f"x{p['ceiling_ratio']:.2f} as fast as alone", highlight=False)
    if results.get("small"):
        m = results["small"]
        console.print(
            f"[bold]Small files[/] {m['files']} x {m['cells_per_file']:,} cells until "
            f"rendered_chunks: the stages alone {m['stages_s']:.2f} s, ingest {m['ingest_s']:.2f} s "
            f"(x{m['ratio']:.2f}; {m['per_file_overhead_s'] * 1000:.0f} ms more per file)",
            highlight=False)
    if not results["targets"]:
        console.print("no target applies to what was run (they name 1m, 200k, merged, the "
                      "Dagster run, parallel ingests of 8 files or more, the 1m command and "
                      "the 50k command against a baseline)", style="dim")
        return
    table = Table(title="Targets (issues #8 and #25)")
    for col in ("target", "measured", "limit", "met"):
        table.add_column(col)
    for t in results["targets"]:
        table.add_row(t["target"], _fmt(t["measured"]), t["limit"],
                      "[green]yes[/]" if t["met"] else "[red]no[/]")
    console.print(table)
