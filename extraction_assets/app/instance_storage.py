"""Dagster's SQLite instance storage with its database connections kept open.

Dagster's :class:`~dagster._core.storage.sqlite_storage.DagsterSqliteStorage` opens a new
SQLAlchemy engine and SQLite connection for every read and write (``NullPool``) and closes it
afterwards. Closing the last connection to a database in WAL mode checkpoints the write-ahead
log into the database file, syncs it to disk and deletes the ``-wal`` and ``-shm`` files
(https://sqlite.org/wal.html, "The WAL File") -- for every event a run stores, twice when the
event is mirrored into the index shard. :class:`PooledSqliteStorage` reads and writes the same
files in the same layout (``history/runs.db``, ``history/runs/index.db``, one
``history/runs/<run_id>.db`` per run, ``schedules/``) through engines it keeps for the life of
the instance, so a run checkpoints its databases once, when its shard's engine is released.
A new run's shard is written as a copy of an empty shard that Dagster's own schema set-up
(``_initdb``: Alembic's revision check, ``create_all``, the stamp) made once per storage,
rather than by that set-up for every run, and a table found in the index shard is remembered
(Dagster's ``has_table`` opens a new connection to ask, several times per run).
The Dagster UI, the daemon and any other process keep using Dagster's own class on the same
files. Commits stay durable: SQLite still syncs the log at each commit (``synchronous=FULL``).

Overrides private methods of Dagster's SQLite storages (``SqliteEventLogStorage._connect``,
``SqliteRunStorage.connect``) of the pinned Dagster release; the tests run every ingest
through them.
"""

from __future__ import annotations

import os
import tempfile
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS, create_db_conn_string
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

#: Run shards whose engines an event log storage keeps besides the index shard's: the run in
#: progress and the one before it (read back for its step statistics or lineage).
KEPT_RUN_SHARDS = 2


def _sqlite_engine(conn_string: str) -> Engine:
    """An engine whose pool keeps one SQLite connection open between uses and hands it to one
    thread at a time; a thread that asks while it is out gets a connection of its own, closed
    when returned."""
    return create_engine(conn_string, pool_size=1, max_overflow=8,
                         connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
                                       "check_same_thread": False})


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """:class:`SqliteEventLogStorage` (one SQLite database per run plus the index shard, under
    ``base_dir``) whose connections stay open: the index shard's for the life of the storage,
    a run shard's until :data:`KEPT_RUN_SHARDS` newer run shards have been used. A run shard
    that does not exist yet is created from :meth:`_run_shard_template`."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._template: bytes | None = None
        self._tables: set[str] = set()
        super().__init__(base_dir, inst_data)

    def has_table(self, table_name: str) -> bool:
        """Whether the index shard has the table; a table once found is not asked for again
        (Dagster's migrations add tables and never drop one; ``wipe`` empties them)."""
        if table_name not in self._tables and super().has_table(table_name):
            self._tables.add(table_name)
        return table_name in self._tables

    def _run_shard_template(self) -> bytes:
        """The bytes of an empty run shard at Dagster's current schema revision, made once by
        Dagster's own :meth:`_initdb` in a temporary folder: ~100 KB, with the write-ahead log
        mode recorded in its header (https://sqlite.org/fileformat2.html, bytes 18-19)."""
        if self._template is None:
            with tempfile.TemporaryDirectory(prefix="extraction-assets-shard-") as folder:
                engine = create_engine(create_db_conn_string(folder, "template"),
                                       poolclass=NullPool)
                self._initdb(engine)
                engine.dispose()  # the last connection closed: the log is checkpointed
                self._template = Path(folder, "template.db").read_bytes()
        return self._template

    def _create_run_shard(self, shard: str) -> bool:
        """Write a new run shard from the template (synced to disk); ``False`` when its file
        already exists (an earlier run's, checked by Dagster's :meth:`_initdb` instead)."""
        template = self._run_shard_template()
        try:
            with open(self.path_for_shard(shard), "xb") as out:
                out.write(template)
                out.flush()
                os.fsync(out.fileno())
        except FileExistsError:
            return False
        return True

    def _engine(self, shard: str) -> Engine:
        """The kept engine of ``shard``; releases the least recently used run shards' beyond
        :data:`KEPT_RUN_SHARDS`. Called with ``_db_lock`` held."""
        engine = self._engines.get(shard)
        if engine is None:
            engine = self._engines[shard] = _sqlite_engine(self.conn_string_for_shard(shard))
        self._engines.move_to_end(shard)
        runs = [name for name in self._engines if name != INDEX_SHARD_NAME]
        for name in runs[:-KEPT_RUN_SHARDS]:
            self._engines.pop(name).dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                if shard == INDEX_SHARD_NAME or not self._create_run_shard(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _release_engines(self) -> None:
        with self._db_lock:
            while self._engines:
                self._engines.popitem()[1].dispose()

    def wipe(self) -> None:
        """Release the connections, then delete every shard (as Dagster's ``wipe``)."""
        self._release_engines()
        super().wipe()

    def dispose(self) -> None:
        """Close every kept connection (checkpointing each database), then stop watching."""
        self._release_engines()
        super().dispose()


class PooledSqliteRunStorage(SqliteRunStorage):
    """:class:`SqliteRunStorage` (``runs.db``) whose connection stays open until
    :meth:`dispose`."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        super().__init__(conn_string, inst_data)
        self._engine = _sqlite_engine(conn_string)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        """Close the kept connection."""
        self._engine.dispose()
        super().dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite instance storage under ``base_dir`` (the Dagster home), same files and
    layout, with the run and event log storages above. Configured as Dagster's ``storage:
    custom`` with ``config: {base_dir: ...}``; :func:`~extraction_assets.app.ingest.open_instance`
    puts it in place of ``DagsterSqliteStorage``."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData,
                          config_value: dict) -> PooledSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
