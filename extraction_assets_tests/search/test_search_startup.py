"""What a ``search`` process pays before its first answer (issue 33), asserted without timing:
it imports neither Dagster nor the stages, the model loads while the vectors are opened, and
the data dir's versions are read once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from extraction_assets.search import retrieval
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.store.storage import DataStore

pytestmark = pytest.mark.integration  # the samples_ingest fixture; search as a process

#: Run as ``python -c``: the ``search`` command as ``python -m extraction_assets.app.cli``
#: runs it (arguments after the code), then, at exit, the top-level packages it imported that
#: a search does not need, as a JSON list on stderr's last line.
_SEARCH_THEN_MODULES = (
    "import atexit, json, runpy, sys\n"
    "atexit.register(lambda: print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}\n"
    "    & {'dagster', 'scipy'})), file=sys.stderr))\n"
    "sys.argv = ['extraction-assets', 'search', *sys.argv[1:]]\n"
    "runpy.run_module('extraction_assets.app.cli', run_name='__main__')\n"
)


def test_the_search_command_imports_neither_dagster_nor_the_stages(samples_ingest):
    """Dagster (~0.5 s to import) and the stages with SciPy (~0.5 s) are for ingest; a search,
    in any mode, answers without them."""
    root, _, _ = samples_ingest
    for mode in ("hybrid", "text"):
        proc = subprocess.run([sys.executable, "-c", _SEARCH_THEN_MODULES, "定格電圧", "--json",
                               "-k", "1", "--mode", mode, "--data-dir", str(root)],
                              check=False, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)[0]["filename"] == "spec_ja.xlsx"
        assert json.loads(proc.stderr.splitlines()[-1]) == [], mode


def test_the_searcher_loads_the_model_while_it_opens_the_vectors(samples_ingest, monkeypatch):
    """The model's load starts in a thread when the Searcher is created, before LanceDB is
    imported and the table opened, and the first query waits for it; the sources table is read
    once for the superseded hashes and the latest paths alike."""
    root, _, _ = samples_ingest
    loading = threading.Event()
    loaded_in: list[threading.Thread] = []

    class Embedder(LocalEmbedder):
        def load(self) -> None:
            loaded_in.append(threading.current_thread())
            loading.set()
            super().load()

    opened = retrieval.VectorStore

    def vector_store(uri):
        assert loading.wait(60), "the model's load did not start before the vectors opened"
        return opened(uri)

    reads = []
    sources = DataStore._sources
    monkeypatch.setattr(retrieval, "VectorStore", vector_store)
    monkeypatch.setattr(DataStore, "_sources", lambda self: reads.append(1) or sources(self))
    searcher = retrieval.Searcher(root, Embedder())
    assert loaded_in and loaded_in[0] is not threading.main_thread()
    assert len(reads) == 1
    assert searcher.search("定格電圧", k=1)[0]["filename"] == "spec_ja.xlsx"
