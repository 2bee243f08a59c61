"""A command run as a process and measured from the outside, as a user runs it: wall seconds
from its start to its exit, CPU seconds and peak resident set size."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from typing import NamedTuple

#: Seconds between two samples of the process tree's resident set size.
SAMPLE_S = 0.01


class Measured(NamedTuple):
    """What :func:`run_measured` saw: ``wall_s`` (start to exit), ``cpu_s`` (user + system of
    the process), ``peak_rss_mb`` (MiB: the kernel's ``ru_maxrss`` of the process, or the
    sampled sum over its tree when larger)."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux ``/proc/PID/task/TID/children``)."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(child) for child in fh.read().split()]
    except OSError:  # gone, or not Linux
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kb(pid: int) -> int:
    """The resident set size in KiB of ``pid`` and all its descendants, summed (0 when gone)."""
    todo, total = [pid], 0
    while todo:
        current = todo.pop()
        total += _rss_kb(current)
        todo += _children(current)
    return total


def run_measured(command: list[str], sample_tree: bool = False) -> Measured:
    """Run ``command`` from a fresh temporary folder outside any checkout (so that ``python -m``
    imports the installation of that interpreter), its output discarded, and measure it.
    ``sample_tree``: also sample the RSS of the process and its descendants every
    :data:`SAMPLE_S` seconds (a command that starts workers).

    Raises:
        RuntimeError: the command exited non-zero (its stderr tail is in the message).
    """
    peak_kb = 0
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_kb
            while not done.is_set():
                peak_kb = max(peak_kb, tree_rss_kb(proc.pid))
                done.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True) if sample_tree else None
        if sampler:
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        if sampler:
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: "
                               f"{err.read().decode(errors='replace')[-2000:]}")
    # ru_maxrss is in KiB on Linux: the main process's exact peak, which sampling may miss
    return Measured(wall, usage.ru_utime + usage.ru_stime, max(peak_kb, usage.ru_maxrss) / 1024)
