"""Hash every table the stages produce for every file of the shared corpus and labelled sets, to
show that a change of the code's structure left every output byte-identical.

    python -m tools.compare_outputs OUT.json [--against BASE.json] [--shared DIR]

writes ``{file: {table: sha256 of its Parquet bytes}}`` (or the typed error a file ends with)
for every file under ``DIR/corpus/files`` and ``DIR/labelled/*/files`` (``DIR`` default
``../shared``, or ``$EXTRACTION_ASSETS_SHARED``); with ``--against`` it lists the files and
tables whose hashes differ from ``BASE.json`` and exits 1 when any does. The stages run as
:func:`~extraction_assets.pipeline.run_pipeline` runs them, tokens counted by the
bundled model; the Parquet bytes are written uncompressed, without statistics.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from extraction_assets.pipeline import StageError, run_pipeline
from extraction_assets.search.embedding import LocalEmbedder
from tools.paths import shared_dir


def table_digest(table: pa.Table) -> str:
    """sha256 (hex) of ``table`` written as Parquet (uncompressed, no statistics)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", write_statistics=False)
    return hashlib.sha256(buf.getvalue()).hexdigest()


def shared_files(shared: Path) -> list[Path]:
    """The corpus files and labelled workbooks under ``shared``, sorted."""
    files = sorted(p for p in (shared / "corpus" / "files").rglob("*") if p.is_file())
    return files + sorted((shared / "labelled").glob("*/files/*.xlsx"))


def output_digests(files: list[Path], root: Path) -> dict[str, dict[str, str]]:
    """``{path relative to root: {table: digest}}``, or ``{"error": "code: message"}`` for a
    file that fails with a typed error."""
    embedder = LocalEmbedder()
    out: dict[str, dict[str, str]] = {}
    for path in files:
        name = str(path.relative_to(root))
        try:
            tables = run_pipeline(path.read_bytes(), filename=path.name,
                                  count_tokens=embedder.count_tokens,
                                  count_tokens_batch=embedder.count_tokens_batch)
        except StageError as exc:
            out[name] = {"error": f"{exc.error.code}: {exc.error.message}"}
            continue
        out[name] = {table: table_digest(data) for table, data in sorted(tables.items())}
    return out


def differences(base: dict, new: dict) -> list[str]:
    """One line per file or table whose digest differs between ``base`` and ``new``."""
    lines = []
    for name in sorted(set(base) | set(new)):
        a, b = base.get(name), new.get(name)
        if a is None or b is None:
            lines.append(f"{name}: only in {'the new run' if a is None else 'the base'}")
            continue
        lines += [f"{name}: {table}" for table in sorted(set(a) | set(b)) if a.get(table) != b.get(table)]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code (1 when outputs differ)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="JSON file to write the digests to")
    ap.add_argument("--against", default=None, help="digests of an earlier run to compare with")
    ap.add_argument("--shared", default=None, help="the shared folder (corpus/, labelled/)")
    args = ap.parse_args(argv)
    shared = Path(args.shared) if args.shared else shared_dir()
    digests = output_digests(shared_files(shared), shared)
    Path(args.out).write_text(json.dumps(digests, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(digests)} files hashed into {args.out}")
    if args.against:
        diff = differences(json.loads(Path(args.against).read_text(encoding="utf-8")), digests)
        for line in diff:
            print(f"  differs: {line}")
        print(f"{len(diff)} differences against {args.against}")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
