"""benchmarks/scaling.py: rounds and medians (``--repeat``)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from processes import Measure  # noqa: E402
from scaling import median_measure  # noqa: E402


def test_median_measure_takes_median_cpu_and_largest_rss() -> None:
    runs = [Measure(3.0, 10.0, True), Measure(1.0, 30.0, True), Measure(2.0, 20.0, True)]
    assert median_measure(runs) == Measure(2.0, 30.0, True)


def test_median_measure_reports_a_failed_round() -> None:
    failed = Measure(math.nan, math.nan, False, "timeout")
    assert median_measure([Measure(1.0, 1.0, True), failed]) is failed


def test_repeat_runs_rounds_through_the_command_line(tmp_path: Path) -> None:
    """Two rounds of three stages on a 12-node chain: one row of medians."""
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "scaling.py"),
            "--sizes",
            "12",
            "--families",
            "chain",
            "--stages",
            "import,xdsl-opt,plan",
            "--solve-sizes",
            "",
            "--repeat",
            "2",
            "--work",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "median of 2 rounds" in result.stdout
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("| chain | 12 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")][3:]
    assert len(cells) == 3 and all(cell.endswith(" MB") or " MB," in cell for cell in cells)
    assert (tmp_path / "chain12.planned.mlir").exists()


def test_repeat_below_one_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "scaling.py"), "--repeat", "0"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "--repeat must be at least 1, got 0" in result.stderr
    assert "Traceback" not in result.stderr
