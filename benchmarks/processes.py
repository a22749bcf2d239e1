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
from collections.abc import Sequence
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


@dataclass(frozen=True)
class Finished:
    """One command's end: its exit code (``None`` when killed at the
    timeout), CPU seconds, peak RSS and what it printed."""

    code: int | None
    cpu: float
    rss_mb: float
    output: str


def run(command: Sequence[object], timeout: float, *, keep_stdout: bool = False) -> Finished:
    """Run ``command``; ``output`` is its stderr, after its stdout with
    ``keep_stdout`` (else stdout is discarded)."""
    with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [str(part) for part in command],
            stdout=output if keep_stdout else sink,
            stderr=output,
        )
        limit = time.monotonic() + timeout
        code: int | None = None
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                code = process.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > limit:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                process.returncode = -9
                break
            time.sleep(0.01)
        output.seek(0)
        text = output.read().decode(errors="replace")
        return Finished(code, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


def measure(command: list[str], timeout: float = 3600.0) -> Measure:
    """Run ``command`` (stdout discarded); its CPU seconds and peak RSS."""
    finished = run(command, timeout)
    if finished.code is None:
        return Measure(float("nan"), finished.rss_mb, False, f"over {timeout:g} s")
    note = ""
    if finished.code != 0:
        lines = finished.output.strip().splitlines()
        note = lines[0][:120] if lines else f"exit {finished.code}"
    return Measure(finished.cpu, finished.rss_mb, finished.code == 0, note)


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
