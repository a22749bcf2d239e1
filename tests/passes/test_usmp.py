"""The `usmp` pass, in process through the pass registry and through `memplan-opt`.

Random programs are straight-line (optionally with `scf.if` diamonds)
sequences of kernel invocations on storages, written as text and run
through `insert-kills` and `usmp` as `memplan-opt` would (verifying the
module after each pass), then checked with `verify-plan` and against the
lower bound of `passes.planning.bounds`.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import get_args
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect import AllocStorageOp, AllocTensorOp, PoolOp
from memplan.passes import get_all_passes
from memplan.passes.analysis import ModuleLifetimes, analyze_module
from memplan.passes.planning.algorithms import ALGORITHMS, AlgorithmName
from memplan.passes.planning.bounds import buffers_lower_bound
from memplan.passes.usmp import UsmpPass
from memplan.passes.usmp.splitting import SplitEdits, apply_splits, storage_splits
from memplan_testing import examples, memplan_context, parse_module, print_module, run_passes

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

FAST = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _pools(module: ModuleOp) -> dict[str, PoolOp]:
    return {op.pool_name: op for op in module.ops if isinstance(op, PoolOp)}


def _used(module: ModuleOp) -> dict[str, int]:
    result = {}
    for name, pool in _pools(module).items():
        assert pool.used is not None, f"@{name} has no used"
        result[name] = pool.used.value.data
    return result


def _storages(module: ModuleOp) -> list[AllocStorageOp]:
    return [op for op in module.walk() if isinstance(op, AllocStorageOp)]


# ---------------------------------------------------------------------------
# Random programs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One kernel call: reads up to two earlier results, writes a new storage."""

    elements: int  # f32 elements of the result (4 bytes each)
    alignment: int
    reads: tuple[int, ...]  # indices of earlier steps (clamped to what exists)
    device: str = "cpu"
    branch: bool = False  # inside an scf.if (both regions get a storage)


def _program(
    steps: list[Step],
    *,
    pools: str = "",
    name: str = "f",
    with_kernels: bool = True,
) -> str:
    """A function running ``steps``; the last result is read into the argument.

    Kernel calls are not type-checked against the declaration of ``@k``, so
    every tensor keeps its own static type.
    """
    lines = []
    if with_kernels:
        lines.append(pools)
        lines.append("func.func private @k(memref<?xf32>, memref<?xf32>)")
    lines.append(f"func.func @{name}(%x: memref<?xf32>, %c: i1) {{")
    results: list[tuple[str, str]] = []  # (tensor, its type)

    def invoke(indent: str, source: tuple[str, str], target: tuple[str, str]) -> None:
        lines.append(
            f"{indent}memory.invoke @k ins({source[0]} : {source[1]}) "
            f"outs({target[0]} : {target[1]})"
        )

    argument = ("%x", "memref<?xf32>")
    for index, step in enumerate(steps):
        size = step.elements * 4
        memref = f"memref<{step.elements}xf32>"
        align = "" if step.alignment == 64 else f" align {step.alignment}"
        device = "" if step.device == "cpu" else f' on "{step.device}"'
        reads = sorted({r % len(results) for r in step.reads}) if results else []
        sources = [results[r] for r in reads] or [argument]
        if step.branch:
            # A storage per region of an scf.if: they never conflict.
            lines.append("  scf.if %c {")
            for region in ("then", "else"):
                if region == "else":
                    lines.append("  } else {")
                storage = f"%s{index}{region}"
                tensor = (f"%t{index}{region}", memref)
                lines.append(
                    f"    {storage} = memory.alloc_storage{align}{device} : !memory.storage<{size}>"
                )
                lines.append(
                    f"    {tensor[0]} = memory.alloc_tensor {storage}[0] "
                    f": !memory.storage<{size}> -> {memref}"
                )
                invoke("    ", sources[0], tensor)
                invoke("    ", tensor, argument)
            lines.append("  }")
            continue
        storage = f"%s{index}"
        tensor = (f"%t{index}", memref)
        lines.append(f"  {storage} = memory.alloc_storage{align}{device} : !memory.storage<{size}>")
        lines.append(
            f"  {tensor[0]} = memory.alloc_tensor {storage}[0] "
            f": !memory.storage<{size}> -> {memref}"
        )
        for source in sources:
            invoke("  ", source, tensor)
        results.append(tensor)
    if results:
        invoke("  ", results[-1], argument)
    lines.append("  func.return")
    lines.append("}")
    return "\n".join(lines) + "\n"


def steps_strategy(
    *,
    max_steps: int = 10,
    devices: tuple[str, ...] = ("cpu",),
    branches: bool = True,
    alignments: tuple[int, ...] = (16, 32, 64, 128),
) -> st.SearchStrategy[list[Step]]:
    step = st.builds(
        Step,
        elements=st.integers(1, 64),
        alignment=st.sampled_from(alignments),
        reads=st.lists(st.integers(0, 20), min_size=1, max_size=2).map(tuple),
        device=st.sampled_from(devices),
        branch=st.booleans() if branches else st.just(False),
    )
    return st.lists(step, min_size=1, max_size=max_steps)


def _lower_bounds(module: ModuleOp) -> dict[str, int]:
    """Per default pool (``workspace_<device>``), the largest bound over functions.

    For a module without pools: the peak of live bytes of each device's
    storages (``buffers_lower_bound`` with the default pool alignment 16).
    """
    lifetimes = analyze_module(module)
    bounds: dict[str, int] = {}
    for function in lifetimes.functions:
        buffers = function.problem().buffers
        for device in sorted({b.device for b in buffers}):
            key = f"workspace_{device}"
            value = buffers_lower_bound([b for b in buffers if b.device == device], 16)
            bounds[key] = max(bounds.get(key, 0), value)
    return bounds


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@FAST
@given(steps_strategy(devices=("cpu", "npu")), st.sampled_from(sorted(ALGORITHMS)))
def test_random_programs_are_pinned_and_verified(steps: list[Step], algorithm: str) -> None:
    """Every static storage is pinned, every pool has `used`, verify-plan accepts."""
    module = run_passes(
        parse_module(_program(steps)), f"insert-kills,usmp{{algorithm={algorithm} budget=20000}}"
    )
    run_passes(module, "verify-plan{require-pinned=true}")
    used = _used(module)
    devices = {step.device for step in steps}
    assert set(used) == {f"workspace_{d}" for d in devices}
    for storage in _storages(module):
        assert storage.pinned is not None
        pool, offset = storage.pinned
        assert offset % storage.alignment_value == 0
        assert offset + (storage.byte_size or 0) <= used[pool]
    bounds = _lower_bounds(run_passes(parse_module(_program(steps)), "insert-kills"))
    for pool, value in used.items():
        assert value >= bounds.get(pool, 0)


@FAST
@given(
    st.lists(st.integers(1, 8), min_size=1, max_size=12),
    st.sampled_from(["auto", "exact"]),
)
def test_chains_reach_the_lower_bound(blocks: list[int], algorithm: str) -> None:
    """A chain (each step reads the previous one) needs max(size_i + size_i+1): reached.

    Sizes are multiples of 64 so no alignment padding is needed: putting the
    steps alternately at the bottom and at the top of that many bytes fits.
    """
    steps = [Step(elements=16 * n, alignment=64, reads=(i - 1,)) for i, n in enumerate(blocks)]
    text = _program(steps)
    module = run_passes(parse_module(text), f"insert-kills,usmp{{algorithm={algorithm}}}")
    run_passes(module, "verify-plan{require-pinned=true}")
    sizes = [64 * n for n in blocks]
    expected = max([sizes[0], *(a + b for a, b in zip(sizes, sizes[1:]))])
    assert _used(module) == {"workspace_cpu": expected}
    assert _lower_bounds(run_passes(parse_module(text), "insert-kills")) == {
        "workspace_cpu": expected
    }


@FAST
@given(steps_strategy(devices=("cpu", "npu")))
def test_deterministic(steps: list[Step]) -> None:
    """The same input gives byte-identical output (auto and hill-climb)."""
    text = _program(steps)
    for spec in ("insert-kills,usmp", "insert-kills,usmp{algorithm=hill-climb seed=7}"):
        first = print_module(run_passes(parse_module(text), spec))
        second = print_module(run_passes(parse_module(text), spec))
        assert first == second


@FAST
@given(steps_strategy(max_steps=8))
def test_idempotent(steps: list[Step]) -> None:
    """Planning a planned module again changes nothing."""
    once = print_module(run_passes(parse_module(_program(steps)), "insert-kills,usmp"))
    twice = print_module(run_passes(parse_module(once), "usmp"))
    assert once == twice


@FAST
@given(steps_strategy(max_steps=8), st.booleans())
def test_coalesce_first_never_costs_memory(steps: list[Step], overlap: bool) -> None:
    """coalesce (either mode) or reuse before usmp uses no more of any pool than usmp alone.

    With mixed alignments too: a merged storage takes the largest member
    alignment, and each tensor it aligns more than its own storage did
    carries `align` with what it had, which usmp's split gives back.
    """
    text = _program(steps)
    # The default budget: enough for these searches to end (and never the
    # clock, which would make the plans depend on the machine's load).
    alone = _used(run_passes(parse_module(text), "insert-kills,usmp"))
    for before in (f"coalesce{{overlap={'true' if overlap else 'false'}}}", "reuse"):
        module = run_passes(parse_module(text), f"insert-kills,{before},usmp")
        run_passes(module, "verify-plan{require-pinned=true}")
        combined = _used(module)
        assert all(combined[pool] <= alone[pool] for pool in alone), (before, combined, alone)


@FAST
@given(steps_strategy(max_steps=8), st.booleans())
def test_usmp_never_loses_to_the_storages_as_given(steps: list[Step], overlap: bool) -> None:
    """Whatever coalesce did, usmp's plan is no bigger than keeping its storages whole."""
    text = _program(steps)
    coalesced = run_passes(
        parse_module(text), f"insert-kills,coalesce{{overlap={str(overlap).lower()}}}"
    )
    whole = _used(run_passes(coalesced.clone(), "usmp{budget=20000 split-storages=false}"))
    seen_through = run_passes(coalesced, "usmp{budget=20000}")
    run_passes(seen_through, "verify-plan{require-pinned=true}")
    assert all(_used(seen_through)[pool] <= whole[pool] for pool in whole)


@settings(FAST, max_examples=examples(60))
@given(steps_strategy(max_steps=8), st.booleans())
def test_a_split_skipped_as_unable_to_win_would_not_have_won(
    steps: list[Step], overlap: bool
) -> None:
    """usmp does not plan the split form where the whole plan already meets a
    lower bound of it (`_split_cannot_win`); planning it anyway gives the
    same module, so the bound is one."""
    coalesced = run_passes(
        parse_module(_program(steps)), f"insert-kills,coalesce{{overlap={str(overlap).lower()}}}"
    )
    planned = print_module(run_passes(coalesced.clone(), "usmp"))
    with patch("memplan.passes.usmp.usmp_pass._split_cannot_win", return_value=False):
        always_split = print_module(run_passes(coalesced, "usmp"))
    assert planned == always_split


def _use_lists(module: ModuleOp) -> list[list[tuple[int, int]]]:
    """Every result's uses, in use-list order, as (user's walk position, operand index)."""
    position = {op: index for index, op in enumerate(module.walk())}
    return [
        [(position.get(use.operation, -1), use.index) for use in result.uses]
        for op in module.walk()
        for result in op.results
    ]


def _analysis_facts(lifetimes: ModuleLifetimes) -> list[object]:
    """What planning and verify-plan read of an analysis, comparable across two runs."""
    return [
        lifetimes.problem(),
        [
            (f.name, len(f.numbering), [(s.name, s.interval, s.killed) for s in f.storages])
            for f in lifetimes.functions
        ],
        [[(t.name, t.interval, t.offset) for t in f.tensors] for f in lifetimes.functions],
    ]


@FAST
@given(steps_strategy(max_steps=8), st.booleans())
def test_split_undo_puts_the_module_back(steps: list[Step], overlap: bool) -> None:
    """usmp splits the module itself to plan the split form; where the whole
    plan wins it undoes the split: the same ops, order, attributes and use lists."""
    module = run_passes(
        parse_module(_program(steps)), f"insert-kills,coalesce{{overlap={str(overlap).lower()}}}"
    )
    before = print_module(module, generic=True)
    uses = _use_lists(module)
    ops = list(module.walk())
    splits = storage_splits(analyze_module(module))
    edits = SplitEdits()
    apply_splits(module, splits, edits)
    assert not splits or print_module(module, generic=True) != before
    edits.undo()
    assert print_module(module, generic=True) == before
    assert list(module.walk()) == ops
    assert _use_lists(module) == uses
    run_passes(module, "")


@FAST
@given(steps_strategy(max_steps=8), st.booleans())
def test_usmp_hands_over_the_analysis_of_the_module_it_leaves(
    steps: list[Step], overlap: bool
) -> None:
    """The analysis `plan` hands from usmp to verify-plan is the analysis of
    the module usmp leaves, as verify-plan would compute it."""
    module = run_passes(
        parse_module(_program(steps)), f"insert-kills,coalesce{{overlap={str(overlap).lower()}}}"
    )
    handed = UsmpPass(budget=2000).apply_providing_lifetimes(memplan_context(), module)
    if handed is not None:
        assert _analysis_facts(handed) == _analysis_facts(analyze_module(module))


def test_mixed_alignments_after_coalesce() -> None:
    """A coalesced storage has the largest member alignment: the 16-aligned tensor at
    its offset 0 would look 32-aligned, but it carries `align 16`, so usmp's split
    packs as tightly as usmp alone (20 bytes, not 36)."""
    steps = [Step(1, 16, (0,)), Step(1, 32, (0,))]
    text = _program(steps)
    assert _used(run_passes(parse_module(text), "insert-kills,usmp")) == {"workspace_cpu": 20}
    merged = run_passes(parse_module(text), "insert-kills,coalesce{overlap=false}")
    tensors = [op for op in merged.walk() if isinstance(op, AllocTensorOp)]
    assert [(t.static_offset, t.required_alignment) for t in tensors] == [(0, 16), (32, None)]
    coalesced = run_passes(merged, "usmp")
    run_passes(coalesced, "verify-plan{require-pinned=true}")
    assert _used(coalesced) == {"workspace_cpu": 20}
    # Each tensor has its own storage again, aligned as it needs: nothing to record.
    assert all(
        op.required_alignment is None for op in coalesced.walk() if isinstance(op, AllocTensorOp)
    )


@FAST
@given(st.lists(steps_strategy(max_steps=6, branches=False), min_size=2, max_size=3))
def test_functions_share_the_workspace(functions: list[list[Step]]) -> None:
    """Default scope: a pool's used is the max over functions of each one planned alone."""
    bodies = [
        _program(steps, name=f"f{i}", with_kernels=False) for i, steps in enumerate(functions)
    ]
    header = "func.func private @k(memref<?xf32>, memref<?xf32>)\n"
    module = run_passes(
        parse_module(header + "".join(bodies)), "insert-kills,usmp{algorithm=exact}"
    )
    run_passes(module, "verify-plan{require-pinned=true}")
    alone = [
        _used(run_passes(parse_module(header + body), "insert-kills,usmp{algorithm=exact}"))[
            "workspace_cpu"
        ]
        for body in bodies
    ]
    assert _used(module) == {"workspace_cpu": max(alone)}
    # scope=module plans them as one program: the functions follow each
    # other on the time line, so the optimum is the same.
    whole = run_passes(
        parse_module(header + "".join(bodies)), "insert-kills,usmp{algorithm=exact scope=module}"
    )
    run_passes(whole, "verify-plan{require-pinned=true}")
    assert _used(whole) == {"workspace_cpu": max(alone)}


@FAST
@given(steps_strategy(max_steps=8, branches=False), st.integers(1, 4))
def test_fallback_respects_pool_sizes(steps: list[Step], quarter: int) -> None:
    """A bounded first pool, an unbounded fallback: the first never overflows, all verify.

    Whatever does not fit @fast goes to @slow; with @fast as large as every
    storage side by side, nothing falls back.
    """
    # Side by side at multiples of the largest alignment always fits.
    grain = max(64, *(step.alignment for step in steps))
    total = sum(-(-step.elements * 4 // grain) * grain for step in steps)
    size = max(64, total * quarter // 4)
    pools = f"memory.pool @fast size {size} align 64\nmemory.pool @slow"
    module = run_passes(
        parse_module(_program(steps, pools=pools)), "insert-kills,usmp{budget=20000}"
    )
    run_passes(module, "verify-plan{require-pinned=true}")
    used = _used(module)
    assert used["fast"] <= size
    if quarter == 4:
        assert used["slow"] == 0
    for storage in _storages(module):
        pin = storage.pinned
        assert pin is not None
        if pin[0] == "slow":
            # It fell back: too large for @fast, or @fast holds something.
            assert (storage.byte_size or 0) > size or used["fast"] > 0


@pytest.mark.parametrize("algorithm", ["greedy-by-size", "auto"])
def test_overflow_is_a_diagnostic(algorithm: str) -> None:
    steps = [Step(16, 64, ()), Step(16, 64, (0,)), Step(16, 64, (0, 1))]
    text = _program(steps, pools="memory.pool @sram size 128")
    with pytest.raises(PassFailedException) as info:
        run_passes(parse_module(text), f"insert-kills,usmp{{algorithm={algorithm}}}")
    message = str(info.value)
    assert "usmp: storage %s2 in @f (64 bytes, align 64" in message
    assert "@sram: size 128, peak 128; impossible: live together with %s0" in message
    assert "it needs 192 bytes" in message


def test_read_only_storages_use_ro_pools() -> None:
    """A storage never written may go to the ro pool listed first; written ones skip it."""
    text = """
    memory.pool @flash access ro
    memory.pool @sram
    func.func private @k(memref<16xf32>, memref<16xf32>)
    func.func @f(%x: memref<16xf32>) {
      %w = memory.alloc_storage : !memory.storage<64>
      %tw = memory.alloc_tensor %w[0] : !memory.storage<64> -> memref<16xf32>
      %a = memory.alloc_storage : !memory.storage<64>
      %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
      memory.invoke @k ins(%tw : memref<16xf32>) outs(%ta : memref<16xf32>)
      func.return
    }
    """
    module = run_passes(parse_module(text), "usmp,verify-plan{require-pinned=true}")
    pins = {op.storage.name_hint: op.pinned for op in _storages(module)}
    assert pins == {"w": ("flash", 0), "a": ("sram", 0)}


def test_pass_class_and_options() -> None:
    assert get_all_passes()["usmp"]() is UsmpPass
    parsed = PassPipeline.parse_spec(
        get_all_passes(),
        "usmp{algorithm=exact budget=5000 timeout=3 seed=2 scope=module replan=true "
        "split-storages=false}",
    ).passes[0]
    assert parsed == UsmpPass(
        algorithm="exact",
        budget=5000,
        timeout=3,
        seed=2,
        scope="module",
        replan=True,
        split_storages=False,
    )
    # No wall clock unless asked for: the plan is the same at any machine load.
    assert UsmpPass().timeout is None
    # The `algorithm` option lists exactly the registry's algorithms.
    assert set(get_args(AlgorithmName)) == set(ALGORITHMS)


@pytest.mark.parametrize("example", ["mlp", "convnet"])
def test_readme_main_job(example: str) -> None:
    """The README's command, through the real driver: pinned, at the lower bound."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplan.tools.memplan_opt",
            "--manifest-alloc",
            "--insert-kills",
            "--usmp",
            "--plan-report",
            str(EXAMPLES / f"{example}.mlir"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "memory.alloc_storage :" not in result.stdout  # nothing left unpinned
    report = [line for line in result.stderr.splitlines() if "@workspace_cpu" in line]
    assert report and "1.00x" in report[0]
