"""More than one machine: ``ingest --celery-broker`` runs the steps on Celery workers
(``dagster-celery``) through a real Redis broker, all on 127.0.0.1.

A Redis server (Debian/Ubuntu: ``apt-get install redis-server``; ``.ci/run`` installs it) and two
workers started with ``dagster-celery worker start``, as the README's "Deploying for a team"
says, take the steps of 16 files (a step per batch of files, 4 batches); one worker is killed
(``SIGKILL``, its whole process group) while it runs a step. Its task goes back to the queue (``task_acks_late``, visibility timeout)
and the other worker runs it; a second ingest of the same files finishes whatever is left. The
data dir must then hold exactly 16 files' rows and one LanceDB unit per chunk and per record,
none twice. Embeddings come from a local fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.fault_helpers import batch_value, fake_embedding_server, write_batch

pytestmark = pytest.mark.slow  # starts Redis and two Celery workers, kills one

N_FILES, N_ROWS = 16, 20
#: Seconds before the broker gives an unacknowledged task (its worker killed) to another worker.
VISIBILITY_TIMEOUT = 10
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _worker(name: str, config: Path, env: dict, log: Path) -> subprocess.Popen:
    """``dagster-celery worker start`` in its own process group: one process runs the steps."""
    with open(log, "w") as out:
        return subprocess.Popen(
            [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
             "-y", str(config), "-n", name, "--loglevel", "INFO", "--", "--concurrency", "1"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def test_celery_workers_take_the_steps_and_a_killed_worker_loses_nothing(tmp_path, monkeypatch):
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        pytest.skip("no redis-server; install it with: apt-get install redis-server")
    port = _free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    data_dir = tmp_path / "data"
    store = DataStore(data_dir)
    open_instance(store).dispose()  # the instance's schema, before two workers open it
    config = tmp_path / "celery.yaml"  # the executor's config, as the README gives it
    config.write_text(
        "execution:\n  config:\n"
        f"    broker: {broker}\n    backend: {broker}\n"
        "    config_source:\n      task_acks_late: true\n      task_reject_on_worker_lost: true\n"
        f"      broker_transport_options: {{visibility_timeout: {VISIBILITY_TIMEOUT}}}\n")
    monkeypatch.setenv("EXTRACTION_ASSETS_CELERY_VISIBILITY_TIMEOUT", str(VISIBILITY_TIMEOUT))
    env = dict(os.environ, DAGSTER_HOME=str(store.dagster_home),
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONUNBUFFERED="1")
    paths = write_batch(tmp_path / "batch", N_FILES, N_ROWS)
    redis = subprocess.Popen([redis_server, "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                             start_new_session=True)
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    workers: list[subprocess.Popen] = []
    try:
        workers = [_worker(f"w{k + 1}", config, env, log) for k, log in enumerate(logs)]
        _wait(lambda: all("ready." in log.read_text() for log in logs), "two ready workers")
        with fake_embedding_server() as server:
            embedder = EmbedderResource(provider="openai", model="fake-embed",
                                        base_url=server.url, api_key_env="")
            first: list = []
            thread = threading.Thread(target=lambda: first.extend(ingest_paths(
                paths, data_dir, embedder, jobs=4, celery_broker=broker)))
            thread.start()
            # kill the first worker while it runs a step (a batch), after it has finished one
            _wait(lambda: logs[0].read_text().count(" received")
                  > logs[0].read_text().count("succeeded in") >= 1, "a step on worker 1")
            _stop(workers[0])
            killed = re.findall(r"execute_plan\[([0-9a-f-]+)\] received", logs[0].read_text())[-1]
            thread.join(timeout=600)
            assert not thread.is_alive(), "the ingest did not end"
            # the step of the killed worker went back to the queue and the other one ran it
            assert re.search(rf"execute_plan\[{killed}\] succeeded in", logs[1].read_text())
            assert {r.status for r in first} <= {"success", "failed"}, first
            again = ingest_paths(paths, data_dir, embedder, jobs=4, celery_broker=broker)
            assert {r.status for r in again} <= {"success", "unchanged"}, again
            assert not [r for r in first + again if r.status == "success" and r.counts[
                "records"] != N_ROWS]
    finally:
        for proc in [*workers, redis]:
            _stop(proc)

    hashes = {r.workbook_hash: int(Path(r.path).stem.split("_")[1]) for r in again}
    assert len(hashes) == N_FILES
    with duckdb.connect(str(store.warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT workbook_hash) FROM workbooks"
                           ).fetchone() == (N_FILES, N_FILES)
        for h, k in hashes.items():
            values = [json.loads(rec)["Value"] for (rec,) in con.execute(
                "SELECT record FROM records WHERE workbook_hash = ? AND role = 'data' "
                "ORDER BY row", [h]).fetchall()]
            assert values == [batch_value(k, r) for r in range(1, N_ROWS + 1)]
        chunks = con.execute("SELECT workbook_hash, chunk_id FROM chunks").fetchall()
        n_records = con.execute("SELECT count(*) FROM records").fetchone()[0]
        assert len(chunks) == len(set(chunks)) >= N_FILES
        lineage = con.execute("SELECT count(DISTINCT workbook_hash), count(DISTINCT asset) "
                              "FROM lineage").fetchone()
        assert lineage == (N_FILES, 6)
    vectors = VectorStore(store.lancedb_uri)
    assert vectors.count() == len(chunks) + n_records  # one unit per chunk and per record
    for h in hashes:
        ids = vectors.unit_ids(h)
        assert len(ids) == len(set(ids)), f"a unit twice in LanceDB for {h}"
        assert sorted(vectors.unit_ids(h, kind="chunk")) == sorted(c for w, c in chunks if w == h)
