"""The benchmark command in its smallest form, so the harness cannot rot: the 10k-cell
workbook, one run, a few chunks embedded, JSON out. Nothing here is timed; it checks that every
stage ran and that the counts are exact."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from tools.bench.main import app, bench_command, parallel_bounds
from tools.bench.measure import STAGES
from tools.bench.report import targets
from tools.bench.workbooks import GENERATED, generate_workbook

pytestmark = pytest.mark.slow  # runs the benchmark


def test_smallest_bench_run_writes_every_stage_with_exact_counts(tmp_path):
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, [
        "--generate", "10k", "--repeat", "1", "--embed-chunks", "4", "--no-docling",
        "--no-dagster", "--no-command", "--parallel-files", "0", "--small-files", "0",
        "--workdir", str(tmp_path / "work"),
        "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "orders_10015.xlsx" in result.output
    results = json.loads(out.read_text())
    assert results["machine"]["cpus"] and results["repeat"] == 1
    [run] = results["files"]
    spec = GENERATED["10k"]
    assert run["file"] == f"{spec.name}.xlsx"
    assert run["cells"] == run["expected"]["cells"] == spec.cells == 10_015
    assert run["records"] == spec.data_rows == 1_000
    assert set(run["stages"]) == set(STAGES)
    stages = run["stages"]
    assert stages["parse"]["rows"] == 10_015 + 6  # and the styled empty header cells
    assert stages["render"]["rows"] == run["chunks"] > 0
    assert run["embed"]["chunks"] == stages["embed"]["rows"] == 4
    assert run["embed"]["tokens_per_s"] > run["embed"]["chunks_per_s"] > 0
    for name, stage in stages.items():
        assert stage["seconds"] > 0, name
        if name != "hash":  # too quick for its rounded seconds
            assert stage["cells_per_s"] == pytest.approx(run["cells"] / stage["seconds"], 0.01)
        assert stage["peak_rss_mb"] is None or stage["peak_rss_mb"] > 50
    for reader in ("calamine", "openpyxl"):
        assert run["references"][reader]["rows"] == run["cells"]
    assert run["hash_to_chunks"]["seconds"] == round(
        sum(stages[s]["seconds"] for s in STAGES[:-1]), 6)
    assert run["ratio_ours_to_calamine"] > 0
    assert "dagster" not in results and "parallel" not in results
    assert results["targets"] == []


def test_parallel_ingest_measure_runs_both_ingests(tmp_path):
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, [
        "--no-generate", "--repeat", "1", "--no-dagster", "--no-command", "--small-files", "0",
        "--parallel-files", "2",
        "--parallel-rows", "30", "--parallel-until", "normalized_grids",
        "--workdir", str(tmp_path / "work"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    parallel = json.loads(out.read_text())["parallel"]
    assert (parallel["files"], parallel["workers"], parallel["cells_per_file"]) == (2, 2, 315)
    assert parallel["serial_s"] > 0 and parallel["parallel_s"] > 0
    assert parallel["ratio"] == pytest.approx(parallel["serial_s"] / parallel["parallel_s"], abs=0.01)
    assert parallel["independent_s"] > 0
    # the times are stored rounded to 3 decimals, the ratio from the times as measured
    assert parallel["independent_ratio"] == pytest.approx(
        parallel["serial_s"] / parallel["independent_s"], abs=0.01)
    assert "independent --jobs 1 ingests" in result.output
    for mode in ("serial", "parallel"):  # where the time goes, from the runs' records
        assert 0 < parallel[f"{mode}_first_run_s"] < parallel[f"{mode}_s"]
        assert 0 < parallel[f"{mode}_run_s"] < parallel[f"{mode}_s"]
    assert (f"the first run starts {parallel['serial_first_run_s']:.2f} s after the command"
            in result.output)
    assert (parallel["bound_ratio"], parallel["ceiling_ratio"]) == parallel_bounds(parallel)
    assert f"x{parallel['ceiling_ratio']:.2f} as fast as alone" in result.output
    # the target is about 8 files: 2 tiny ones are measured but not judged
    assert json.loads(out.read_text())["targets"] == []


def test_parallel_bounds_leave_the_time_before_the_first_run_unshared():
    measured = {"serial_s": 18.35, "serial_first_run_s": 3.79, "parallel_first_run_s": 4.38,
                "serial_run_s": 1.55, "parallel_run_s": 1.75, "workers": 2}
    # 18.35 / (4.38 + 14.56 x 1.75 / 1.55 / 2) and 18.35 / (3.79 + 14.56 / 2)
    assert parallel_bounds(measured) == (1.46, 1.66)
    # no time before the first run and no slowdown: the workers' count
    assert parallel_bounds({**measured, "serial_first_run_s": 0, "parallel_first_run_s": 0,
                            "parallel_run_s": 1.55}) == (2.0, 2.0)


def test_parallel_target_judges_runs_of_eight_files_or_more():
    def judged(files: int, ratio: float, independent: float) -> list[tuple]:
        rows = targets({"files": [], "parallel": {"files": files, "workers": 2, "ratio": ratio,
                                                  "independent_ratio": independent}})
        return [(t["target"], t["measured"], t["limit"], t["met"]) for t in rows]

    name = "parallel: --jobs 2 speed-up / independent processes'"
    assert judged(8, 1.2, 1.5) == [(name, 0.8, ">= 0.9", False)]
    assert judged(16, 1.4, 1.5) == [(name, 0.93, ">= 0.9", True)]
    assert judged(2, 0.71, 1.5) == []


def test_command_measure_runs_the_cli_and_reads_dagsters_step_records(tmp_path):
    """The ingest command as a process, twice alternating (ours and a "baseline" that is this
    same installation): wall, peak RSS of the process tree, every asset's step seconds, the
    embedding's throughput from chunk_embeddings' metadata, ratios."""
    path = generate_workbook(tmp_path / "small.xlsx", 30)
    result = bench_command(path, None, 1, sys.executable, {"cells": 315, "data_rows": 30})
    assert (result["cells"], result["until"], result["runs"]) == (315, "chunk_embeddings", 1)
    assert result["calamine_s"] > 0 and result["stages_s"] > 0
    for version in ("ours", "baseline"):
        run = result[version]
        assert list(run["steps_s"]) == ["workbook", "parsed_sheets", "normalized_grids",
                                        "segmented_blocks", "rendered_chunks",
                                        "chunk_embeddings"]
        assert 0 < run["steps_total_s"] < run["wall_s"]
        assert run["outside_steps_s"] == round(run["wall_s"] - run["steps_total_s"], 3)
        assert 100 < run["peak_rss_mb"] < 4000  # the interpreter, Dagster, the model
        # calamine_s is rounded to 0.1 ms: on this tiny file that is a few per cent
        assert run["ratio_to_calamine"] == pytest.approx(run["wall_s"] / result["calamine_s"],
                                                         rel=0.2)
        embed = run["embed"]
        # the 30 records embedded; the chunks of rows made of their records' vectors
        assert embed["units"] > embed["embedded"] == 30
        assert embed["model_tokens_per_s"] > embed["model_units_per_s"] > 0
        assert embed["tokens"] > 30 * 10
    assert result["speedup"] == round(result["baseline"]["wall_s"] / result["ours"]["wall_s"], 2)
    judged = targets({"files": [], "commands": [
        {**result, "file": f"{GENERATED['50k'].name}.xlsx", "speedup": 2.5}]})
    assert [(t["limit"], t["met"]) for t in judged] == [(">= 2", True)]
