"""Timing a command as users run it: one process, its own CPU seconds and peak RSS.

``measure(command)`` runs ``command`` and reaps it with ``os.wait4``, which
reports the resource usage of that child alone (``RUSAGE_CHILDREN`` would
mix every child ever waited for). CPU seconds (user + system) barely move
with the machine's load, unlike wall time. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Measure:
    """What one run cost; ``ok`` is a zero exit, ``note`` the first error line."""

    cpu: float
    rss_mb: float
    ok: bool
    note: str = ""


def tool(name: str) -> str:
    """A console script of this Python's environment (memplan-opt, xdsl-opt, ...)."""
    path = BIN / name
    return str(path) if path.exists() else name


def measure(command: list[str], timeout: float = 3600.0) -> Measure:
    """Run ``command`` (stdout discarded); its CPU seconds and peak RSS."""
    with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=sink, stderr=err)
        limit = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > limit:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                process.returncode = -9
                return Measure(float("nan"), usage.ru_maxrss / 1024, False, f"over {timeout:g} s")
            time.sleep(0.01)
        process.returncode = os.waitstatus_to_exitcode(status)
        note = ""
        if process.returncode != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            note = lines[0][:120] if lines else f"exit {process.returncode}"
        cpu = usage.ru_utime + usage.ru_stime
        return Measure(cpu, usage.ru_maxrss / 1024, process.returncode == 0, note)


def best_of(repeat: int, command: list[str]) -> Measure:
    """The run with the least CPU of ``repeat`` (a failure is returned at once)."""
    best: Measure | None = None
    for _ in range(max(repeat, 1)):
        result = measure(command)
        if not result.ok:
            return result
        if best is None or result.cpu < best.cpu:
            best = result
    assert best is not None
    return best
