"""Partition discovery at scale (B36): 40,000 keys at once on a real Dagster instance with SQLite
storage, and the real inbox sensor evaluated against a real instance; what a few keys cost in
an instance of 100,000 partitions (issue 35: each file must not pay for every file before it)."""

from __future__ import annotations

import hashlib
import json
import time

import pytest
from dagster import AssetSelection, DagsterInstance, build_sensor_context, materialize

from extraction_assets.app.ingest import open_instance
from extraction_assets.app.samples import write_samples
from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.definitions import make_definitions
from extraction_assets.defs.partitions import (
    ADD_BATCH_SIZE,
    MAX_RUNS_PER_TICK,
    PAGE_SIZE,
    PARTITION_TAG,
    RANGE_TAGS,
    add_partition_keys,
    existing_partition_keys,
    files_per_run,
    keys_with_runs,
    new_key_batches,
    partition_positions,
    plan_discovery,
    run_partition_keys,
    workbook_partitions,
)
from extraction_assets.defs.sensors import inbox_sensor
from extraction_assets.store.storage import DataStore

#: B36 asks a second discovery of the same keys to finish in under 30 s.
SECOND_TICK_SECONDS = 30
#: Partitions of the crowded instance: issue 35's data dir.
CROWD = 100_000


def _recipe_keys(n: int) -> list[str]:
    return [hashlib.sha256(("workbook-%05d" % i).encode()).hexdigest() for i in range(n)]


@pytest.fixture(scope="module")
def b36_keys(cases_dir) -> list[str]:
    """The 40,000 keys of ``B36_dynamic_partitions_spec.json``."""
    spec = json.loads((cases_dir / "B36_dynamic_partitions_spec.json").read_text())
    assert spec["partitions_def"] == workbook_partitions.name
    return _recipe_keys(spec["n_keys"])


def test_b36_one_tick_discovers_forty_thousand_keys(b36_keys, tmp_path):
    assert len(b36_keys) == 40_000
    with DagsterInstance.local_temp(str(tmp_path)) as instance:  # SQLite storage in tmp_path
        plan = plan_discovery(b36_keys, existing_partition_keys(instance),
                              keys_with_runs(instance))
        assert max(len(batch) for batch in plan.add_batches) <= ADD_BATCH_SIZE
        assert [k for batch in plan.add_batches for k in batch] == b36_keys
        assert plan.run_keys == b36_keys[:MAX_RUNS_PER_TICK]
        assert plan.waiting == 40_000 - MAX_RUNS_PER_TICK
        for batch in plan.add_batches:  # what the sensor daemon does with each add request
            instance.add_dynamic_partitions(workbook_partitions.name, batch)
        stored = instance.get_dynamic_partitions(workbook_partitions.name)
        assert len(stored) == len(set(stored)) == 40_000 and set(stored) == set(b36_keys)

        start = time.perf_counter()
        again = plan_discovery(b36_keys, existing_partition_keys(instance),
                               keys_with_runs(instance))
        seconds = time.perf_counter() - start
        assert again.add_batches == []
        assert seconds < SECOND_TICK_SECONDS, f"second tick took {seconds:.1f} s"
        # no run exists yet: the same keys are requested again, none is lost
        assert again.run_keys == plan.run_keys


def test_b36_ingest_path_adds_forty_thousand_keys_in_batches(b36_keys, tmp_path):
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        assert add_partition_keys(instance, b36_keys + b36_keys[:10]) == b36_keys
        stored = instance.get_dynamic_partitions(workbook_partitions.name)
        assert len(stored) == len(set(stored)) == 40_000
        start = time.perf_counter()
        assert add_partition_keys(instance, b36_keys) == []
        assert time.perf_counter() - start < SECOND_TICK_SECONDS


def test_capped_run_requests_reach_every_key_exactly_once():
    keys = _recipe_keys(40_000)
    with_runs: set[str] = set()
    requested: list[str] = []
    while True:
        plan = plan_discovery(keys, set(keys), with_runs)
        if not plan.run_keys:
            break
        assert len(plan.run_keys) <= MAX_RUNS_PER_TICK
        assert plan.waiting == len(keys) - len(requested) - len(plan.run_keys)
        if len(requested) == 1000:  # this tick's requests never became runs (daemon died)
            assert plan_discovery(keys, set(keys), with_runs).run_keys == plan.run_keys
        requested.extend(plan.run_keys)
        with_runs.update(plan.run_keys)  # the runs the requests became
    assert len(requested) == len(set(requested)) == len(keys)
    assert plan.waiting == 0


def test_new_key_batches_keep_first_seen_order_without_duplicates():
    assert new_key_batches(["c", "a", "c", "b", "d"], {"b"}, batch_size=2) == [["c", "a"], ["d"]]
    assert new_key_batches([], set()) == []
    with pytest.raises(ValueError, match="batch_size"):
        new_key_batches(["a"], set(), batch_size=0)
    with pytest.raises(ValueError, match="max_runs"):
        plan_discovery(["a"], set(), set(), max_runs=-1)


@pytest.mark.integration
def test_inbox_sensor_adds_each_new_content_once_and_requests_runs_until_they_exist(tmp_path):
    store = DataStore(tmp_path / "data")
    store.inbox.mkdir(parents=True)
    first, _, _ = write_samples(store.inbox)
    (store.inbox / "copy of ledger.xlsx").write_bytes(first.read_bytes())
    (store.inbox / "readme.txt").write_text("not a spreadsheet suffix")
    defs = make_definitions(str(store.root))

    def tick(instance):
        return inbox_sensor(build_sensor_context(instance=instance, resources=defs.resources))

    with open_instance(store) as instance:
        result = tick(instance)
        keys = sorted(r.partition_key for r in result.run_requests)
        assert len(keys) == 3
        assert [r.run_key for r in result.run_requests] == [r.partition_key
                                                            for r in result.run_requests]
        assert [sorted(r.partition_keys) for r in result.dynamic_partitions_requests
                if r.partitions_def_name == workbook_partitions.name] == [keys]
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)

        again = tick(instance)
        assert again.dynamic_partitions_requests == []
        # partitions added but no run yet (e.g. the daemon stopped before launching them)
        assert sorted(r.partition_key for r in again.run_requests) == keys

        run = materialize(ALL_ASSETS, selection=AssetSelection.assets(ALL_ASSETS[0]),
                          partition_key=keys[0], instance=instance, resources=defs.resources)
        assert run.success and keys_with_runs(instance) == {keys[0]}
        assert sorted(r.partition_key for r in tick(instance).run_requests) == keys[1:]
    assert store.source_of(keys[0])["filename"] in {p.name for p in store.inbox.iterdir()}


@pytest.fixture(scope="module")
def crowded(tmp_path_factory):
    """A Dagster instance (SQLite storage) holding :data:`CROWD` partitions, added by Dagster's
    own call, so that none of the functions under test made it."""
    keys = _recipe_keys(CROWD)
    with DagsterInstance.local_temp(str(tmp_path_factory.mktemp("crowded"))) as instance:
        for start in range(0, CROWD, 1_000):
            instance.add_dynamic_partitions(workbook_partitions.name, keys[start:start + 1_000])
        yield instance


def _fastest(call, times: int = 3) -> float:
    """The fewest seconds ``call()`` took of ``times`` calls (the machine's quietest moment)."""
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def _every_key_s(instance) -> float:
    return _fastest(lambda: instance.get_dynamic_partitions(workbook_partitions.name))


def _new_keys(tag: str, n: int) -> list[str]:
    return [hashlib.sha256(f"{tag}-{k}".encode()).hexdigest() for k in range(n)]


def test_adding_a_few_keys_to_a_crowded_instance_does_not_read_every_key(crowded):
    every_key = _every_key_s(crowded)
    seconds = []
    for attempt in range(3):
        keys = _new_keys(f"files-{attempt}", 5)
        start = time.perf_counter()
        assert add_partition_keys(crowded, keys + keys[:2]) == keys
        seconds.append(time.perf_counter() - start)
        assert add_partition_keys(crowded, keys) == []  # now they are partitions
    stored = crowded.get_dynamic_partitions(workbook_partitions.name)
    assert len(stored) == len(set(stored)) == CROWD + 15
    # an ingest of five files paid a fetch of all 100,000 keys (~0.2 s) for these five
    assert min(seconds) < every_key / 3, (min(seconds), every_key)


def test_the_newest_keys_order_and_range_are_read_from_the_newest_partitions(crowded):
    stored = crowded.get_dynamic_partitions(workbook_partitions.name)
    newest = stored[-5:]
    tags = dict(zip(RANGE_TAGS, (newest[0], newest[-1])))
    every_key = _every_key_s(crowded)
    assert run_partition_keys(crowded, tags) == newest
    assert partition_positions(crowded, reversed(newest)) == {
        key: n - 5 for n, key in enumerate(newest)}
    # a run's lineage and an ingest's batches read a page, not all 100,000 keys (~0.2 s)
    assert _fastest(lambda: run_partition_keys(crowded, tags)) < every_key / 3
    assert _fastest(lambda: partition_positions(crowded, newest)) < every_key / 3


def test_order_and_ranges_across_pages_agree_with_every_key(crowded):
    stored = crowded.get_dynamic_partitions(workbook_partitions.name)
    picked = [stored[-1], stored[-2], stored[-PAGE_SIZE - 1], stored[-3 * PAGE_SIZE],
              stored[-10 * PAGE_SIZE]]
    positions = partition_positions(crowded, picked + ["not a partition"])
    assert positions == {key: stored.index(key) - len(stored) for key in picked}
    span = dict(zip(RANGE_TAGS, (stored[-3 * PAGE_SIZE], stored[-PAGE_SIZE + 2])))
    assert run_partition_keys(crowded, span) == stored[-3 * PAGE_SIZE:-PAGE_SIZE + 3]
    assert run_partition_keys(crowded, {**span, RANGE_TAGS[1]: "deleted"}) == []
    assert run_partition_keys(crowded, {**span, RANGE_TAGS[0]: "deleted"}) == []
    assert run_partition_keys(crowded, {PARTITION_TAG: stored[3]}) == [stored[3]]
    assert run_partition_keys(crowded, {}) == [] and partition_positions(crowded, []) == {}


def test_files_share_a_run_only_while_listing_the_keys_costs_less_than_runs_of_their_own():
    """A run over a range of keys makes Dagster list every key ~40 times, and 6 times more per
    file: on a small instance a batch shares one run's cost; past ~20,000 keys 5 small files,
    and past ~50,000 keys any number, go faster one file a run."""
    assert files_per_run(10, 5, 250) == 250
    assert files_per_run(10_000, 250, 250) == 250
    assert files_per_run(10_000, 2, 250) == 1  # one file fewer does not pay 40 listings
    assert files_per_run(30_000, 5, 250) == 1
    assert files_per_run(30_000, 250, 250) == 250
    assert files_per_run(100_000, 250, 250) == 1
    assert files_per_run(100_000, 1, 250) == 1


def test_the_partitions_of_a_data_dir_are_its_registered_files(tmp_path):
    store = DataStore(tmp_path / "data")
    assert store.partition_count() == 0
    for n in range(3):
        (tmp_path / f"f{n}.csv").write_text(f"a,b\n{n},2\n")
        store.register_source(tmp_path / f"f{n}.csv")
    store.register_source(tmp_path / "f0.csv")  # the same bytes again: the same partition
    assert store.partition_count() == 3
