"""Run a `.tflite` model in TensorFlow Lite Micro and read the arena it used.

``run_tflm`` runs the ``tflite-micro`` package's Python interpreter
(``tflite_micro.runtime.Interpreter``, TFLM's reference kernels) in a child
process, so that an abort in TFLM cannot take the caller down: it sets the
inputs, invokes once, and returns the outputs and the three figures TFLM's
``RecordingMicroAllocator`` prints (``print_allocations``, on stderr):
"Arena allocation head" (the planned tensors and the kernels' scratch
buffers: what an offline plan governs), "tail" (TFLM's persistent data)
and "total". When TFLM fails, ``error`` holds its first message that says
why (a missing kernel, a node that fails to prepare, the allocation).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_ARENA_BYTES = 256 * 1024 * 1024

_WORKER = r"""
import ctypes, sys
import numpy as np
from tflite_micro.python.tflite_micro import runtime
folder, arena = sys.argv[1], int(sys.argv[2])
try:
    interpreter = runtime.Interpreter.from_file(folder + "/model.tflite", arena_size=arena)
    inputs = np.load(folder + "/inputs.npz")
    for index in range(len(inputs.files)):
        interpreter.set_input(inputs[f"i{index}"], index)
    interpreter.invoke()
    outputs = {}
    index = 0
    while True:
        try:
            outputs[f"o{index}"] = interpreter.get_output(index)
        except (IndexError, RuntimeError, ValueError):
            break
        index += 1
    np.savez(folder + "/outputs.npz", **outputs)
    interpreter.print_allocations()
finally:
    ctypes.CDLL(None).fflush(None)  # TFLM's C stdio, which says what failed
"""


@dataclass
class TflmRun:
    """One TFLM run: outputs and arena figures, or why it failed."""

    outputs: list[np.ndarray] = field(default_factory=list[np.ndarray])
    head: int | None = None
    tail: int | None = None
    total: int | None = None
    error: str | None = None


def _figure(text: str, what: str) -> int | None:
    found = re.search(rf"Arena allocation {what} (\d+) bytes", text)
    return int(found.group(1)) if found else None


def _failure(text: str, returncode: int) -> str:
    node = re.search(r"Node (\w+) \(number (\d+)\) failed to prepare", text)
    if node:
        return f"{node.group(1)} (node {node.group(2)}) fails to prepare"
    missing = re.search(r"registration from op code (\w+)", text)
    if missing:
        return f"no {missing.group(1)} kernel"
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "[RecordingMicroAllocator]")):
            return line
    return f"exit {returncode}"


def run_tflm(
    model: bytes,
    inputs: Sequence[np.ndarray],
    arena_bytes: int = DEFAULT_ARENA_BYTES,
    timeout: float = 600,
) -> TflmRun:
    """``model`` run once in TFLM on ``inputs`` (in the subgraph's input order)."""
    with tempfile.TemporaryDirectory(prefix="memplan-tflm-") as folder:
        Path(folder, "model.tflite").write_bytes(model)
        arrays: dict[str, Any] = {f"i{n}": a for n, a in enumerate(inputs)}
        np.savez(Path(folder, "inputs.npz"), **arrays)
        done = subprocess.run(
            [sys.executable, "-c", _WORKER, folder, str(arena_bytes)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        text = done.stdout + "\n" + done.stderr
        outputs_path = Path(folder, "outputs.npz")
        if done.returncode != 0 or not outputs_path.exists():
            return TflmRun(error=_failure(text, done.returncode))
        with np.load(outputs_path) as saved:
            outputs = [saved[f"o{n}"] for n in range(len(saved.files))]
    return TflmRun(
        outputs, _figure(text, "head"), _figure(text, "tail"), _figure(text, "total"), None
    )
