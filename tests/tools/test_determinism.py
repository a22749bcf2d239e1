"""Same input, byte-identical output: the IR and every report format under
different ``PYTHONHASHSEED``s (set and dict orders of strings change with
it), for the example programs and a multi-function lit input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INPUTS = ["examples/convnet.mlir", "examples/mlp.mlir", "test_lit/passes/usmp.mlir"]


def _outputs(source: str, seed: str, work: Path) -> dict[str, bytes]:
    work.mkdir()
    argv = [sys.executable, "-m", "memplan.tools.memplan_opt", str(REPO / source)]
    if source.startswith("examples"):
        argv.append("--plan")
    else:
        argv += ["--split-input-file", "--coalesce", "--usmp=algorithm=hill-climb"]
    for fmt, name in (
        ("json", "r.json"),
        ("svg", "r.svg"),
        ("trace", "t.json"),
        ("c-header", "r.h"),
        ("text", "r.txt"),
    ):
        argv.append(f"--plan-report=format={fmt} output={work / name}")
    argv += ["-o", str(work / "out.mlir")]
    subprocess.run(
        argv, check=True, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True
    )
    return {path.name: path.read_bytes() for path in sorted(work.iterdir())}


@pytest.mark.parametrize("source", INPUTS)
def test_output_does_not_depend_on_the_hash_seed(source: str, tmp_path: Path) -> None:
    first = _outputs(source, "0", tmp_path / "a")
    second = _outputs(source, "4242", tmp_path / "b")
    assert set(first) == {"out.mlir", "r.json", "r.svg", "t.json", "r.h", "r.txt"}
    for name in first:
        assert first[name] == second[name], f"{source}: {name} differs between hash seeds"
