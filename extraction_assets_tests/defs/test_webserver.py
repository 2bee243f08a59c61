"""The Dagster webserver serves the project's asset graph from ``workspace.yaml``.

One module-scoped fixture ingests three sample workbooks (one real run) into a temp data dir, then
starts ``python -m dagster_webserver -w <repo>/workspace.yaml`` on 127.0.0.1 against that data
dir's instance (``DAGSTER_HOME=<data-dir>/dagster``). The tests talk to its GraphQL API with
``urllib``. At teardown the server is stopped by its PID with SIGTERM (SIGKILL to its process
group only if it does not exit in time) and must have exited.

The child resets SIGTERM/SIGINT to their defaults before exec: a process started in the
background (e.g. by a shell job or a CI runner) may inherit SIGINT/SIGTERM as ignored, and the
webserver would then never stop on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts the Dagster webserver

REPO = Path(__file__).resolve().parents[2]
WORKSPACE = REPO / "workspace.yaml"

ASSETS = {"workbook", "parsed_sheets", "normalized_grids", "segmented_blocks",
          "rendered_chunks", "chunk_embeddings"}
#: The catalog of file names (:mod:`extraction_assets.defs.catalog`), and the name the fixture
#: gives one of its files.
CATALOG = "files"
ORDERS = "Q3 orders.xlsx"
CHECKS = {"cell_coverage", "values_in_output", "chunk_budget", "record_provenance",
          "one_row_per_unit", "rows_in_one_chunk", "heading_paths"}

START_TIMEOUT = 90.0  # seconds until the code location must be loaded
STOP_TIMEOUT = 20.0  # seconds after SIGTERM before the process group is killed
BIND_ERRORS = ("address already in use", "error while attempting to bind",
               "cannot assign requested address", "permission denied")

WORKSPACE_QUERY = """
query {
  workspaceOrError {
    __typename
    ... on PythonError { message }
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on PythonError { message stack }
        }
      }
    }
  }
}
"""

ASSET_NODES_QUERY = """
query {
  assetNodes {
    assetKey { path }
    isPartitioned
    partitionKeys
    partitionDefinition { name type }
  }
}
"""

LATEST_MATERIALIZATIONS_QUERY = """
query LatestMaterializations($partitions: [String!]) {
  assetNodes {
    assetKey { path }
    latestMaterializationByPartition(partitions: $partitions) {
      runId
      partition
      timestamp
    }
  }
}
"""

ASSET_CHECKS_QUERY = """
query {
  assetNodes {
    assetKey { path }
    assetChecksOrError {
      __typename
      ... on AssetChecks { checks { name } }
      ... on AssetCheckNeedsMigrationError { message }
      ... on AssetCheckNeedsUserCodeUpgrade { message }
      ... on AssetCheckNeedsAgentUpgradeError { message }
    }
  }
}
"""


# --------------------------------------------------------------------------- helpers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _reset_signals() -> None:  # runs in the child between fork and exec
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "<no output>"
    return "\n".join(text.splitlines()[-lines:]) or "<empty>"


class Server:
    def __init__(self, proc: subprocess.Popen, base_url: str, log: Path):
        self.proc = proc
        self.base_url = base_url
        self.log = log

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 30.0) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/graphql", data=body, method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(
                f"GraphQL HTTP {exc.code}: {exc.read()[:2000]!r}\n"
                f"server log tail:\n{_tail(self.log)}"
            ) from exc
        assert not payload.get("errors"), (
            f"GraphQL errors: {payload['errors']}\nserver log tail:\n{_tail(self.log)}"
        )
        return payload["data"]

    def stop(self) -> tuple[int | None, bool]:
        """SIGTERM by PID, then SIGKILL to the process group if needed. Returns (returncode,
        whether SIGTERM alone sufficed)."""
        proc = self.proc
        graceful = True
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                graceful = False
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: pgid == pid
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        # Leftovers of the group (e.g. the code server the webserver spawned), if any.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return proc.poll(), graceful


def _start(data_dir: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """Start the webserver; return it and its base URL once ``/server_info`` answers.

    Skips on a port bind failure (after retries); fails, with the log tail, on any other exit.
    """
    env = dict(os.environ)
    env.update({
        "DAGSTER_HOME": str(data_dir / "dagster"),
        "EXTRACTION_ASSETS_HOME": str(data_dir),
        "PYTHONUNBUFFERED": "1",
    })
    env.pop("DAGSTER_WEBSERVER_PORT", None)
    env.pop("DAGSTER_WEBSERVER_HOST", None)
    deadline = time.monotonic() + START_TIMEOUT
    bind_failures = []
    for _attempt in range(3):
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(port),
                 "-w", str(WORKSPACE)],
                cwd=str(REPO), env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_reset_signals,
            )
        while True:
            code = proc.poll()
            if code is not None:
                tail = _tail(log)
                if any(marker in tail.lower() for marker in BIND_ERRORS):
                    bind_failures.append(f"port {port}: exit {code}")
                    break  # try another port
                pytest.fail(f"dagster webserver exited with {code} before answering; "
                            f"log tail:\n{tail}")
            if time.monotonic() > deadline:
                Server(proc, base_url, log).stop()
                pytest.fail(f"dagster webserver did not answer /server_info within "
                            f"{START_TIMEOUT:.0f} s; log tail:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base_url}/server_info", timeout=2) as response:
                    if response.status == 200:
                        return proc, base_url
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
    pytest.skip(f"dagster webserver could not bind a port on 127.0.0.1: {bind_failures}; "
                f"log tail:\n{_tail(log)}")


def _wait_loaded(server: Server) -> None:
    """Wait until the workspace's code location is loaded; fail on a load error."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert server.proc.poll() is None, (
            f"dagster webserver died (exit {server.proc.returncode}); "
            f"log tail:\n{_tail(server.log)}"
        )
        data = server.graphql(WORKSPACE_QUERY)["workspaceOrError"]
        assert data["__typename"] == "Workspace", f"workspace error: {data}"
        entries = data["locationEntries"]
        assert entries, "workspace.yaml defines no code location"
        if all(entry["loadStatus"] == "LOADED" for entry in entries):
            for entry in entries:
                loaded = entry["locationOrLoadError"] or {}
                assert loaded.get("__typename") == "RepositoryLocation", (
                    f"code location {entry['name']!r} failed to load: "
                    f"{loaded.get('message')}\n{''.join(loaded.get('stack') or [])}"
                )
            return
        assert time.monotonic() < deadline, (
            f"code location still loading after {START_TIMEOUT:.0f} s: {entries}"
        )
        time.sleep(0.5)


def _key(node: dict) -> str:
    return "/".join(node["assetKey"]["path"])


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    from extraction_assets.app.ingest import ingest_paths
    from extraction_assets.app.samples import write_samples

    root = tmp_path_factory.mktemp("webserver-data")
    data_dir = root / "data"
    paths = write_samples(root / "samples")
    paths[1] = paths[1].rename(paths[1].with_name(ORDERS))  # was quarterly_report.xlsx
    results = ingest_paths(paths, data_dir)
    assert [r.status for r in results] == ["success"] * 3, [
        (r.path, r.status, r.error) for r in results
    ]
    hashes = [r.workbook_hash for r in results]

    log = root / "webserver.log"
    proc, base_url = _start(data_dir, log)
    server = Server(proc, base_url, log)
    try:
        _wait_loaded(server)
        yield server, hashes
    finally:
        code, graceful = server.stop()
        assert code is not None, f"webserver (pid {proc.pid}) still running after SIGKILL"
        assert graceful, (
            f"webserver (pid {proc.pid}) ignored SIGTERM for {STOP_TIMEOUT:.0f} s and was "
            f"killed; log tail:\n{_tail(log)}"
        )


# --------------------------------------------------------------------------- tests


def test_six_assets_with_both_partitions(webserver):
    server, hashes = webserver
    nodes = server.graphql(ASSET_NODES_QUERY)["assetNodes"]
    by_key = {_key(node): node for node in nodes}
    assert set(by_key) == ASSETS | {CATALOG}
    assert by_key.pop(CATALOG)["partitionDefinition"] == {"name": "file_names", "type": "DYNAMIC"}
    for key, node in by_key.items():
        assert node["isPartitioned"], key
        assert node["partitionDefinition"]["type"] == "DYNAMIC", (key, node["partitionDefinition"])
        assert node["partitionDefinition"]["name"] == "workbooks", (key, node["partitionDefinition"])
        assert set(hashes) <= set(node["partitionKeys"]), (key, node["partitionKeys"])


def test_latest_materialization_per_partition(webserver):
    server, hashes = webserver
    data = server.graphql(LATEST_MATERIALIZATIONS_QUERY, {"partitions": hashes})
    by_key = {_key(node): node["latestMaterializationByPartition"] for node in data["assetNodes"]
              if _key(node) != CATALOG}
    assert set(by_key) == ASSETS
    for key, events in by_key.items():
        assert len(events) == len(hashes), (key, events)
        for workbook_hash, event in zip(hashes, events):
            assert event is not None, f"{key}: no materialization of partition {workbook_hash}"
            assert event["partition"] == workbook_hash, (key, event)
            assert event["runId"], (key, event)
    # Each partition was materialized by one run covering all six assets.
    for index, workbook_hash in enumerate(hashes):
        run_ids = {events[index]["runId"] for events in by_key.values()}
        assert len(run_ids) == 1, (workbook_hash, run_ids)
    # and the files of one ingest were one batch: a run over all their partition keys
    assert len({event["runId"] for event in by_key["workbook"]}) == 1


def _check_names(server: Server) -> dict[str, set[str]]:
    nodes = server.graphql(ASSET_CHECKS_QUERY)["assetNodes"]
    names: dict[str, set[str]] = {}
    for node in nodes:
        result = node["assetChecksOrError"]
        assert result["__typename"] == "AssetChecks", (_key(node), result)
        names[_key(node)] = {check["name"] for check in result["checks"]}
    return names


def test_asset_checks_listed(webserver):
    server, _ = webserver
    names = _check_names(server)
    assert names.pop(CATALOG) == set()
    assert set(names) == ASSETS
    assert set().union(*names.values()) == CHECKS
    assert names["segmented_blocks"] == {"cell_coverage"}
    assert names["rendered_chunks"] == {"values_in_output", "chunk_budget", "record_provenance",
                                        "rows_in_one_chunk", "heading_paths"}
    assert names["chunk_embeddings"] == {"one_row_per_unit"}


# The queries the UI sends to find a file by its name: the Partitions tab of the ``files`` asset
# (``PartitionHealthQuery``, ui-core ``assets/usePartitionHealthData.tsx``), which filters the
# keys by what is typed in its search box, and the page of the partition clicked
# (``AssetPartitionDetailQuery``, ``assets/AssetPartitionDetail.tsx``), trimmed to the fields read.
PARTITION_HEALTH_QUERY = """
query PartitionHealthQuery($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    __typename
    ... on AssetNode {
      partitionKeysByDimension { name partitionKeys }
      assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions } }
    }
  }
}
"""

ASSET_PARTITION_DETAIL_QUERY = """
query AssetPartitionDetailQuery($assetKey: AssetKeyInput!, $partitionKey: String!) {
  assetOrError(assetKey: $assetKey) {
    __typename
    ... on Asset {
      assetEventHistory(partitions: [$partitionKey], limit: 1000,
                        eventTypeSelectors: [MATERIALIZATION]) {
        results {
          ... on MaterializationEvent {
            partition
            metadataEntries {
              label
              ... on TextMetadataEntry { text }
              ... on PathMetadataEntry { path }
              ... on PipelineRunMetadataEntry { runId }
            }
          }
        }
      }
    }
  }
}
"""

RUN_QUERY = """
query RunQuery($runId: ID!) {
  runOrError(runId: $runId) { __typename ... on Run { status } }
}
"""


def _search_partitions(keys: list[str], typed: str) -> list[str]:
    """The keys the Partitions tab lists for what is typed in its search box (ui-core
    ``assets/AssetPartitions.tsx``: ``key.toLowerCase().includes(search.toLocaleLowerCase()
    .trim())``)."""
    return [key for key in keys if typed.lower().strip() in key.lower()]


def test_a_file_of_a_batch_is_found_by_its_name_in_the_files_catalog(webserver):
    server, hashes = webserver
    node = server.graphql(PARTITION_HEALTH_QUERY, {"assetKey": {"path": [CATALOG]}})[
        "assetNodeOrError"]
    assert node["__typename"] == "AssetNode", node
    [dimension] = node["partitionKeysByDimension"]
    assert sorted(node["assetPartitionStatuses"]["materializedPartitions"]) == sorted(
        dimension["partitionKeys"]) == sorted(["ledger.xlsx", ORDERS, "spec_ja.xlsx"])
    [key] = _search_partitions(dimension["partitionKeys"], "orders ")
    assert key == ORDERS

    asset = server.graphql(ASSET_PARTITION_DETAIL_QUERY,
                           {"assetKey": {"path": [CATALOG]}, "partitionKey": key})["assetOrError"]
    [event] = asset["assetEventHistory"]["results"]
    metadata = {e["label"]: e.get("text") or e.get("path") or e.get("runId")
                for e in event["metadataEntries"]}
    assert event["partition"] == ORDERS
    assert metadata["workbook_hash"] == hashes[1] and metadata["status"] == "success"
    assert metadata["source_path"].endswith(f"/samples/{ORDERS}")
    # the run linked is the batch's run that materialized the file's partition
    run = server.graphql(RUN_QUERY, {"runId": metadata["run"]})["runOrError"]
    assert run == {"__typename": "Run", "status": "SUCCESS"}
    latest = server.graphql(LATEST_MATERIALIZATIONS_QUERY, {"partitions": hashes})["assetNodes"]
    [workbook] = [n["latestMaterializationByPartition"] for n in latest if _key(n) == "workbook"]
    assert {event["runId"] for event in workbook} == {metadata["run"]}
