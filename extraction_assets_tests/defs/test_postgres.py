"""Postgres run/event storage (dagster-postgres): a throwaway PostgreSQL cluster on 127.0.0.1,
a ``dagster.yaml`` with ``storage: postgres:`` in ``<data-dir>/dagster``, and a real ingest of
the bundled samples whose runs and materializations must land in Postgres.

Skips only when no PostgreSQL server binaries (``initdb``, ``pg_ctl``) are installed
(Debian/Ubuntu: ``apt-get install postgresql``). PostgreSQL refuses to run as root, so as root
the cluster runs as the ``postgres`` user in a temp dir it owns.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.app.samples import write_samples
from extraction_assets.defs.catalog import files_catalog
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore

pytestmark = pytest.mark.slow  # starts a PostgreSQL server

DB_NAME = "extraction_assets_test"
#: ``event_logs.asset_key`` of the files catalog's materializations.
CATALOG_KEY = files_catalog.key.to_string()
PG_USER = "postgres"


def _server_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, newest version first, or ``None``."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
                        reverse=True)
    found = shutil.which("initdb")
    for initdb in [*candidates, *([found] if found else [])]:
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists():
            return folder
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A PostgreSQL cluster in a temp dir, run as the ``postgres`` user when we are root."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="ea-pg-"))
        self.data = self.root / "data"
        if self.as_root:
            import pwd

            try:
                entry = pwd.getpwnam(PG_USER)
            except KeyError:
                pytest.skip(f"running as root and there is no {PG_USER!r} user to run PostgreSQL")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.root.chmod(0o700)

    def _command(self, *args: object) -> list[str]:
        cmd = [str(a) for a in args]
        if not self.as_root:
            return cmd
        if shutil.which("runuser"):
            return ["runuser", "-u", PG_USER, "--", *cmd]
        return ["su", PG_USER, "-s", "/bin/sh", "-c", shlex.join(cmd)]

    def run(self, *args: object, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = self._command(*args)
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              cwd=self.root)
        assert done.returncode == 0, f"{shlex.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def start(self) -> None:
        self.run(self.bin / "initdb", "-D", self.data, "-U", PG_USER, "-A", "trust", "-E", "UTF8",
                 "--no-sync")
        options = f"-p {self.port} -h 127.0.0.1 -k {self.root} -F"
        self.run(self.bin / "pg_ctl", "-D", self.data, "-l", self.root / "server.log", "-w",
                 "-t", "60", "-o", options, "start")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(self._command(self.bin / "pg_ctl", "-D", self.data, "-m", "fast",
                                         "-w", "-t", "60", "stop"),
                           check=False, capture_output=True, timeout=90, cwd=self.root)
        shutil.rmtree(self.root, ignore_errors=True)

    def connect(self, db: str = "postgres"):
        import psycopg2

        con = psycopg2.connect(host="127.0.0.1", port=self.port, user=PG_USER, dbname=db)
        con.autocommit = True
        return con


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    bin_dir = _server_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl); "
                    "install them with: apt-get install postgresql")
    pg = Cluster(bin_dir)
    try:
        pg.start()
        con = pg.connect()
        try:
            with con.cursor() as cur:
                cur.execute(f"CREATE DATABASE {DB_NAME}")
        finally:
            con.close()
        yield pg
    finally:
        pg.stop()
    assert not pg.root.exists()


def _postgres_yaml(port: int) -> str:
    """A ``dagster.yaml`` with Postgres run, event and schedule storage on the cluster."""
    return ("storage:\n"
            "  postgres:\n"
            "    postgres_db:\n"
            f"      username: {PG_USER}\n"
            "      password: ''\n"
            "      hostname: 127.0.0.1\n"
            f"      db_name: {DB_NAME}\n"
            f"      port: {port}\n"
            # SQLAlchemy 2.1 maps plain ``postgresql://`` to psycopg 3, which dagster-postgres
            # does not install; it brings psycopg2
            "      scheme: postgresql+psycopg2\n"
            "telemetry:\n"
            "  enabled: false\n")


def test_ingest_with_postgres_run_and_event_storage(cluster: Cluster, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = DataStore(data_dir)
    store.dagster_home.mkdir(parents=True)
    (store.dagster_home / "dagster.yaml").write_text(_postgres_yaml(cluster.port))
    paths = write_samples(tmp_path / "samples")
    results = ingest_paths(paths, data_dir)
    assert [r.status for r in results] == ["success"] * len(paths), [r.error for r in results]
    run_ids = {r.run_id for r in results}

    with open_instance(store) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert {run.run_id for run in instance.get_runs()} == run_ids
        assert set(instance.get_dynamic_partitions("workbooks")) == \
            {r.workbook_hash for r in results}

    con = cluster.connect(DB_NAME)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT run_id, status FROM runs")
            assert dict(cur.fetchall()) == {run_id: "SUCCESS" for run_id in run_ids}
            # six per file, and one in the files catalog (partition: the file's name)
            cur.execute("SELECT asset_key = %s, count(*), count(DISTINCT partition) "
                        "FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION' "
                        "GROUP BY 1 ORDER BY 1", (CATALOG_KEY,))
            assert cur.fetchall() == [(False, 6 * len(paths), len(paths)),
                                      (True, len(paths), len(paths))]
    finally:
        con.close()
    # nothing went to SQLite
    assert not list(store.dagster_home.rglob("*.db"))
    # the lineage view (exported from the event log) covers every run
    import duckdb

    with duckdb.connect(str(store.warehouse_path), read_only=True) as wh:
        assert {r for (r,) in wh.execute("SELECT DISTINCT run_id FROM lineage").fetchall()} \
            == run_ids


def test_inbox_runs_go_through_the_run_queue_on_postgres(cluster: Cluster, tmp_path: Path) -> None:
    """A team's deployment as the README gives it: Postgres storage, Dagster's run queue
    (``QueuedRunCoordinator``, at most 2 runs at once) and the daemon (``dagster-daemon run``,
    which also runs the inbox sensor); Dagster's default run launcher starts each run. Files
    dropped into the inbox become partitions, queued runs that the daemon launches, and
    materializations in Postgres, each run tagged with its file's name; the units the runs
    wrote end up in the full-text index."""
    import signal
    import sys
    import time

    data_dir = tmp_path / "data"
    store = DataStore(data_dir)
    store.dagster_home.mkdir(parents=True)
    (store.dagster_home / "dagster.yaml").write_text(
        _postgres_yaml(cluster.port)
        + "run_coordinator:\n  module: dagster\n  class: QueuedRunCoordinator\n"
          "  config:\n    max_concurrent_runs: 2\n"
          "run_launcher:\n  module: dagster\n  class: DefaultRunLauncher\n")
    paths = write_samples(store.inbox)
    env = dict(os.environ, DAGSTER_HOME=str(store.dagster_home),
               EXTRACTION_ASSETS_HOME=str(data_dir))
    daemon = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-m",
         "extraction_assets.defs.definitions"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "daemon.log", "w"),
        start_new_session=True)
    try:
        deadline = time.monotonic() + 400
        while True:
            with open_instance(store) as instance:
                runs = instance.get_runs()
                done = [r for r in runs if r.is_finished]
                if len(runs) == len(paths) and len(done) == len(paths):
                    break
            assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(2)
        # the run status sensor folds the units the runs wrote into the full-text index
        while VectorStore(store.lancedb_uri).unindexed_rows():
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(2)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
    with open_instance(store) as instance:
        runs = instance.get_runs()
        assert {r.status.value for r in runs} == {"SUCCESS"}
        assert sorted(r.tags["extraction_assets/filename"] for r in runs) == sorted(
            p.name for p in paths)
        for run in runs:  # queued first, then launched by the daemon
            kinds = [e.dagster_event.event_type_value for e in instance.all_logs(run.run_id)
                     if e.dagster_event]
            assert kinds.index("PIPELINE_ENQUEUED") < kinds.index("PIPELINE_START"), kinds
        records = instance.get_run_records()
        starts = sorted((r.start_time, r.end_time) for r in records)
        for k, (start, _) in enumerate(starts):  # never more than 2 runs at once
            assert sum(1 for s, e in starts[:k] if e > start) < 2
    con = cluster.connect(DB_NAME)
    try:
        with con.cursor() as cur:
            # six per file, and one in the files catalog (partition: the file's name)
            cur.execute("SELECT asset_key = %s, count(*), count(DISTINCT partition) "
                        "FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION' "
                        "GROUP BY 1 ORDER BY 1", (CATALOG_KEY,))
            assert cur.fetchall() == [(False, 6 * len(paths), len(paths)),
                                      (True, len(paths), len(paths))]
    finally:
        con.close()
