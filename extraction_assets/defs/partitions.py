"""The one partitions definition of the asset graph — a dynamic partition per file content hash —
and how discovered keys become partitions and runs: new keys are found (the sensor: against one
fetch of the existing keys, a set; ``ingest``: looked up :data:`ADD_BATCH_SIZE` at a time, never a
query per key) and added in batches of at most :data:`ADD_BATCH_SIZE`, so 40,000 files
discovered at once never hit a storage limit such as SQLite's number of SQL variables (B36).

What an ingest or a run does with a few keys costs what those keys cost, not what the instance
holds: :func:`add_partition_keys` asks the storage about its keys only, and the partitions'
order around a few keys (:func:`partition_positions`, :func:`run_partition_keys`) is read from
the newest partition backwards, page by page, as far as the oldest key asked about (new files
are the newest partitions). Fetching every key costs 2-5 s per million partitions; a run over a
range of keys makes Dagster fetch them all many times (:func:`files_per_run`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set
from dataclasses import dataclass

from dagster import DagsterInstance, DynamicPartitionsDefinition

#: Partition keys are the sha256 hex digests of the workbook files' bytes.
workbook_partitions = DynamicPartitionsDefinition(name="workbooks")

#: Most partition keys added by one ``add_dynamic_partitions`` call or add request.
ADD_BATCH_SIZE = 500

#: Most runs the inbox sensor requests in one tick; the other keys get theirs on later ticks.
MAX_RUNS_PER_TICK = 200

#: Partition keys read at a time, newest first, by :func:`newest_partition_keys`.
PAGE_SIZE = 1_000

#: Seconds Dagster takes to list every dynamic partition key, per key (SQLite: 0.2-0.5 s per
#: 100,000 keys, ``python -m tools.bench.partitions``).
KEY_LISTING_S = 3e-6
#: How often Dagster 1.13 lists every key for a run over a range of keys: about 40 times a run
#: (each asset at launch, each step's output, each IO-manager input three times) and once per
#: file and asset (``add_asset_metadata(partition_key=...)`` checks the key against the range);
#: a run of one key lists none.
RANGE_LISTINGS, FILE_LISTINGS = 40, 6
#: Seconds a run of one file costs beyond its share of a batch (run, steps, events).
RUN_S = 0.7


def files_per_run(partitions: int, files: int, most: int) -> int:
    """How many files one run should take when ``files`` are to be materialized on an instance
    of about ``partitions`` keys: ``most`` (a run over a range of keys, which shares a run's
    fixed cost) while listing the keys for it (:data:`RANGE_LISTINGS` and
    :data:`FILE_LISTINGS` times, :data:`KEY_LISTING_S` each per key) costs less than a run of
    its own for each file (:data:`RUN_S`), else 1: 2 files share a run up to ~4,500
    partitions, 5 up to ~13,500, 250 up to ~38,000, none past that, so that a file's cost no
    longer grows with the files before it."""
    k = min(files, most)
    listing = partitions * KEY_LISTING_S * (RANGE_LISTINGS + FILE_LISTINGS * k)
    return most if k > 1 and listing < RUN_S * (k - 1) else 1

#: The run tag Dagster gives every run of one partition.
PARTITION_TAG = "dagster/partition"
#: The run tags Dagster gives a run over a range of partition keys.
RANGE_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


def existing_partition_keys(instance: DagsterInstance,
                            partitions_def: DynamicPartitionsDefinition = workbook_partitions
                            ) -> set[str]:
    """Every key of ``partitions_def`` (default: the ``workbooks`` partitions), fetched in one
    query."""
    return set(instance.get_dynamic_partitions(partitions_def.name))


def keys_with_runs(instance: DagsterInstance) -> set[str]:
    """The partition keys that at least one run (queued, running or finished; from the
    sensor, the CLI or a backfill) was created for, fetched in one query of the run tags."""
    for key, values in instance.get_run_tags(tag_keys=[PARTITION_TAG]):
        if key == PARTITION_TAG:
            return set(values)
    return set()


def newest_partition_keys(instance: DagsterInstance,
                          page_size: int = PAGE_SIZE) -> Iterator[str]:
    """The ``workbooks`` partition keys from the newest to the oldest (the reverse of the
    partitions' order), read ``page_size`` at a time as the caller goes on: stopping early
    reads only the pages up to there (one indexed query each)."""
    cursor = None
    while True:
        page = instance.get_paginated_dynamic_partitions(
            workbook_partitions.name, limit=page_size, ascending=False, cursor=cursor)
        yield from page.results
        if not page.has_more:
            return
        cursor = page.cursor


def partition_positions(instance: DagsterInstance, keys: Iterable[str]) -> dict[str, int]:
    """The position of each of ``keys`` in the partitions' order, counted from the newest
    partition (-1) backwards, so that two keys are consecutive partitions exactly when their
    positions differ by one. Reads the keys from the newest down to the oldest of ``keys``
    (:func:`newest_partition_keys`): a few new files cost a page, not every partition. A key
    that is not a partition gets no position."""
    wanted = set(keys)
    positions: dict[str, int] = {}
    if not wanted:
        return positions
    for n, key in enumerate(newest_partition_keys(instance), start=1):
        if key in wanted:
            positions[key] = -n
            if len(positions) == len(wanted):
                break
    return positions


def run_partition_keys(instance: DagsterInstance, tags: Mapping[str, str]) -> list[str]:
    """The ``workbooks`` partition keys a run targets, from its tags: its partition, or every key
    of its range in the partitions' order (empty for a run of no partition, or of a range one
    of whose keys was deleted since). A range is read from the newest partition back to its
    start (:func:`newest_partition_keys`), not with every key of the instance."""
    if PARTITION_TAG in tags:
        return [tags[PARTITION_TAG]]
    start, end = (tags.get(tag) for tag in RANGE_TAGS)
    if not start or not end:
        return []
    span: list[str] = []
    for key in newest_partition_keys(instance):
        if key == end or span:
            span.append(key)
        if key == start:
            return span[::-1]
    return []  # a key of the range was deleted since


def _batched(keys: list[str], size: int) -> list[list[str]]:
    return [keys[start:start + size] for start in range(0, len(keys), size)]


def new_key_batches(discovered: Iterable[str], existing: Set[str],
                    batch_size: int = ADD_BATCH_SIZE) -> list[list[str]]:
    """The ``discovered`` keys not in ``existing``, once each in first-seen order, cut into
    batches of at most ``batch_size`` keys (one add call or add request each).

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    new = [key for key in dict.fromkeys(discovered) if key not in existing]
    return _batched(new, batch_size)


@dataclass(frozen=True)
class DiscoveryPlan:
    """What one sensor tick does with the keys it discovered.

    Attributes:
        add_batches: keys that are not partitions yet, first-seen order, each batch at most
            ``batch_size`` keys.
        run_keys: keys to request a run for in this tick (at most ``max_runs``): discovered
            keys, new or not, that no run exists for yet, first-seen order.
        waiting: discovered keys with no run that are left for later ticks.
    """

    add_batches: list[list[str]]
    run_keys: list[str]
    waiting: int


def plan_discovery(discovered: Iterable[str], existing: Set[str], with_runs: Set[str],
                   max_runs: int = MAX_RUNS_PER_TICK,
                   batch_size: int = ADD_BATCH_SIZE) -> DiscoveryPlan:
    """Plan one discovery: the keys to add (see :func:`new_key_batches`) and the runs to
    request. Nothing is lost to the run cap: a key is requested again on every later plan until
    a run exists for it (``with_runs``, see :func:`keys_with_runs`), so a key added in one tick
    whose run was left for later, or whose request never became a run, still gets one. Every
    check is a set lookup: O(len(discovered)) in all.

    Raises:
        ValueError: ``max_runs`` < 0 or ``batch_size`` < 1.
    """
    if max_runs < 0:
        raise ValueError(f"max_runs must be >= 0, got {max_runs}")
    keys = list(dict.fromkeys(discovered))
    without_run = [key for key in keys if key not in with_runs]
    return DiscoveryPlan(new_key_batches(keys, existing, batch_size), without_run[:max_runs],
                         max(0, len(without_run) - max_runs))


def add_partition_keys(instance: DagsterInstance, keys: Iterable[str],
                       batch_size: int = ADD_BATCH_SIZE,
                       partitions_def: DynamicPartitionsDefinition = workbook_partitions
                       ) -> list[str]:
    """Add the ``keys`` that are not partitions of ``partitions_def`` (default: the
    ``workbooks`` partitions) yet, in batches of at most ``batch_size``; returns them (the keys
    that were not partitions when their batch was looked up), first-seen order. The storage is
    asked about these keys only, ``batch_size`` at a time, never for every partition: adding a
    few keys to an instance of a million partitions costs what it costs on a new one. Another
    process adding some of the same keys at the same time is fine: a batch that fails is
    retried once with the keys still missing.

    Raises:
        ValueError: ``batch_size`` < 1.
        Exception: the storage's error when a batch cannot be added even on the retry.
    """
    added: list[str] = []
    name = partitions_def.name
    for looked_up in new_key_batches(keys, set(), batch_size):
        present = instance.get_existing_dynamic_partitions(name, looked_up)
        batch = [key for key in looked_up if key not in present]
        if not batch:
            continue
        try:
            instance.add_dynamic_partitions(name, batch)
        except Exception:  # noqa: BLE001 - storage-specific integrity errors of a race
            present = instance.get_existing_dynamic_partitions(name, batch)
            missing = [key for key in batch if key not in present]
            if missing:
                instance.add_dynamic_partitions(name, missing)
        added.extend(batch)
    return added
