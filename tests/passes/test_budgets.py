"""Searches stop on work budgets, not on the clock: the same plan at any load.

The input is a generated pool problem that the exact search cannot finish
within the budget used here (it walks down from the greedy peak towards an
unreachable lower bound), so the budget is what ends the search: if a clock
ended it instead, a busy machine would stop it earlier, with another plan.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memplan.passes.analysis import analyze_module
from memplan.passes.planning.algorithms import PlanOptions, solve
from memplan_testing import parse_module, print_module, run_passes

BUDGET = 5_000  # a fraction of a second of search


def _program() -> str:
    """200 storages (alignment 1, 1 B to 30 kB) with random lifetimes."""
    rng = random.Random(19)
    spans = []
    for _ in range(200):
        start = rng.randrange(200)
        size = rng.randint(1, 30000)
        spans.append((start, start + rng.randint(1, 60), size))
    # Kills before allocations at the same time: lifetimes are half-open.
    events = sorted(
        [(start, 1, i) for i, (start, _, _) in enumerate(spans)]
        + [(end, 0, i) for i, (_, end, _) in enumerate(spans)]
    )
    lines = ["memory.pool @sram align 1", "func.func @main() {"]
    for _, allocate, i in events:
        storage = f"!memory.storage<{spans[i][2]}>"
        if allocate:
            lines.append(f"  %s{i} = memory.alloc_storage align 1 : {storage}")
        else:
            lines.append(f"  memory.kill %s{i} : {storage}")
    lines += ["  func.return", "}"]
    return "\n".join(lines) + "\n"


def test_the_budget_ends_the_search_here() -> None:
    # The premise of the tests below: the budget, not the end of the
    # search, stops it; twice the same work, the same plan.
    problem = analyze_module(parse_module(_program())).problem()
    first = solve(problem, "auto", PlanOptions(budget=BUDGET))
    second = solve(problem, "auto", PlanOptions(budget=BUDGET))
    assert first.stats["stage"] == "exact"
    assert first.stats["stopped_by"] == "budget"
    assert first.status == "feasible"
    assert first.stats["work"] == second.stats["work"]
    assert first.placements == second.placements
    # A bigger budget does better here, so a search stopped earlier by a busy
    # clock would show in the plan.
    more = solve(problem, "auto", PlanOptions(budget=4 * BUDGET))
    assert more.peak(problem) < first.peak(problem)


def test_the_default_never_reads_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every clock read jumps an hour ahead: a search that stopped on a
    # deadline would stop at once; one that stops on its budget is unmoved.
    text = _program()
    spec = f"usmp{{budget={BUDGET}}}"
    expected = print_module(run_passes(parse_module(text), spec))
    now = [time.perf_counter()]

    def racing() -> float:
        now[0] += 3600.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", racing)
    assert print_module(run_passes(parse_module(text), spec)) == expected


def test_the_plan_is_the_same_on_a_busy_machine(tmp_path: Path) -> None:
    source = tmp_path / "pool.mlir"
    source.write_text(_program())
    argv = [sys.executable, "-m", "memplan.tools.memplan_opt", str(source)]
    argv.append(f"--usmp=budget={BUDGET}")

    def plan() -> bytes:
        return subprocess.run(argv, check=True, capture_output=True, timeout=300).stdout

    idle = plan()
    # A CPU-bound process per core competes with the planner.
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = plan()
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert b"memory.pool @sram align 1 used" in idle
    assert loaded == idle
