"""Parametric plans from `usmp{parametric=true}`, checked by `verify-plan` and
by the planning core's validator at random sizes.

Random programs are straight-line sequences of storage allocations and
kills (a storage lives from its `memory.alloc_storage` to its `memory.kill`)
in one function with ranged dims N and M; dynamic storages carry a
`memory.reserve` of the dims and a `max` at least its value at the upper
ends. Planned with `usmp{parametric=true}` and checked by `verify-plan`, the
offset program evaluated at random dims in the ranges must be a valid plan
at those sizes (`passes.planning.validate`: no two live storages share
bytes, every offset aligned to its storage and pool), never above the `at`
offsets, and the pool's `used` never above the bound's plan.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplan.dialect import AllocStorageOp, PoolOp
from memplan.passes.analysis import analyze_module
from memplan.passes.analysis.parametric import function_dims, parametric_pools, storage_reserve
from memplan.passes.planning.model import Placement, Problem, Solution
from memplan.passes.planning.parametric import derive_parametric, evaluate
from memplan.passes.planning.validate import validate
from memplan_testing import examples, parse_module, print_module, run_passes

REPO = Path(__file__).resolve().parents[2]
BATCH = REPO / "test_lit" / "Inputs" / "parametric-batch.mlir"

FAST = settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

RANGES = {"N": (1, 8), "M": (2, 5)}


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A function of 2 to 7 storages, static and dynamic, in one pool."""
    count = draw(st.integers(2, 7))
    pool_align = draw(st.sampled_from([16, 64, 128]))
    args: list[str] = []
    allocs: list[str] = []
    for index in range(count):
        align = draw(st.sampled_from([16, 64]))
        if draw(st.booleans()):
            size = draw(st.integers(1, 32)) * 16
            allocs.append(
                f"%s{index} = memory.alloc_storage align {align} : !memory.storage<{size}>"
            )
            continue
        scale = draw(st.integers(1, 8)) * 16
        extra = draw(st.integers(0, 3)) * 16
        uses_m = draw(st.booleans())
        reserve = f"{scale}*N*M" if uses_m else f"{scale}*N"
        if extra:
            reserve += f"+{extra}"
        top = scale * RANGES["N"][1] * (RANGES["M"][1] if uses_m else 1) + extra
        slack = draw(st.integers(0, 2)) * 16
        args.append(f"%n{index}: index")
        allocs.append(
            f"%s{index} = memory.alloc_storage(%n{index}) max {top + slack} align {align} "
            f'{{memory.reserve = "{reserve}"}} : !memory.storage<?>'
        )
    # Each storage is killed at a random point after its allocation.
    events: list[tuple[float, int, str]] = []
    for index, alloc in enumerate(allocs):
        events.append((float(index), 0, alloc))
        end = draw(st.floats(index + 0.1, count + 0.5))
        kind = "?" if "(%n" in alloc else alloc.rsplit("<", 1)[1].rstrip(">")
        events.append((end, 1, f"memory.kill %s{index} : !memory.storage<{kind}>"))
    body = "\n    ".join(text for _, _, text in sorted(events))
    ranges = ", ".join(f"{name} = array<i64: {lo}, {hi}>" for name, (lo, hi) in RANGES.items())
    return (
        f"memory.pool @pool align {pool_align}\n"
        f"func.func @main({', '.join(args)}) attributes {{memory.dim_ranges = {{{ranges}}}}} {{\n"
        f"    {body}\n    func.return\n}}\n"
    )


def _used(module_text: str, spec: str) -> tuple[str, int]:
    module = run_passes(parse_module(module_text), spec)
    pool = next(op for op in module.ops if isinstance(op, PoolOp))
    assert pool.used is not None
    return print_module(module), pool.used.value.data


def _check_at(module_text: str, dims: dict[str, int]) -> int:
    """Validate the planned ``module_text``'s program at ``dims`` with the
    planning core's validator; the pool's bytes there."""
    module = parse_module(module_text)
    lifetimes = analyze_module(module)
    (function,) = lifetimes.functions
    (program,) = parametric_pools(function.func, [s.alloc for s in function.storages])
    offsets = program.offsets(dims)
    reserved = program.reserved_offsets()
    placed = {entry.alloc: (entry, offset) for entry, offset in zip(program.storages, offsets)}
    buffers = []
    placements: dict[str, Placement] = {}
    for storage in function.storages:
        entry, offset = placed[storage.alloc]
        assert offset <= reserved[entry.slot]
        buffer = lifetimes.module_buffer(function, storage, pin=False)
        buffers.append(replace(buffer, size=entry.size.evaluate(dims)))
        placements[buffer.id] = Placement(program.pool, offset)
    findings = validate(Problem(tuple(buffers), lifetimes.pools), Solution(placements))
    assert not findings, f"at {dims}: {findings[0]}\n{module_text}"
    return program.size(dims)


@FAST
@given(programs(), st.data())
def test_parametric_plans_are_valid_at_every_drawn_size(text: str, data: st.DataObject) -> None:
    planned, used = _used(text, "usmp{parametric=true},verify-plan")
    _, bound = _used(text, "usmp")
    assert used <= bound
    assert "memory.slot" in planned or "memory.reserve" not in text
    if "memory.reserve" not in text:
        return
    upper = {name: hi for name, (_, hi) in RANGES.items()}
    assert _check_at(planned, upper) <= used
    for _ in range(3):
        dims = {name: data.draw(st.integers(lo, hi)) for name, (lo, hi) in RANGES.items()}
        assert _check_at(planned, dims) <= used


def test_static_storages_only_get_no_program() -> None:
    """A function without reserves keeps the bound's plan, with no slots."""
    text = (
        "memory.pool @pool align 64\n"
        "func.func @main(%n: index) {\n"
        "  %a = memory.alloc_storage(%n) max 128 : !memory.storage<?>\n"
        "  %b = memory.alloc_storage : !memory.storage<64>\n"
        "  memory.kill %a : !memory.storage<?>\n"
        "  memory.kill %b : !memory.storage<64>\n"
        "  func.return\n"
        "}\n"
    )
    planned, _ = _used(text, "usmp{parametric=true},verify-plan")
    assert planned == _used(text, "usmp")[0]
    assert "memory.slot" not in planned


def test_the_batch_plan_takes_80_bytes_per_sample() -> None:
    """The hand-written plan of dynamic_batch.onnx, read back: 80*N bytes at
    every N in its range, and its `at` offsets are the program's."""
    module = parse_module(BATCH.read_text())
    run_passes(module, "verify-plan")
    function = analyze_module(module).function("main")
    storages = [op for op in function.func.walk() if isinstance(op, AllocStorageOp)]
    (program,) = parametric_pools(function.func, storages)
    dim = function_dims(function.func)["N"]
    for n in range(dim.lower, dim.upper + 1):
        assert program.size({"N": n}) == 80 * n
    assert program.reserved_offsets() == [
        entry.alloc.pinned[1] for entry in program.storages if entry.alloc.pinned
    ]


CHOICE = """
memory.pool @pool align 16
func.func @main(%n0: index, %n1: index, %n3: index, %n4: index, %n5: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>, M = array<i64: 2, 5>}} {
  %s0 = memory.alloc_storage(%n0) max 5152 align 16 {memory.reserve = "128*N*M"} : !memory.storage<?>
  %s1 = memory.alloc_storage(%n1) max 1296 align 64 {memory.reserve = "32*N*M+16"} : !memory.storage<?>
  %s2 = memory.alloc_storage align 64 : !memory.storage<352>
  memory.kill %s2 : !memory.storage<352>
  %s3 = memory.alloc_storage(%n3) max 3920 align 16 {memory.reserve = "96*N*M+48"} : !memory.storage<?>
  %s4 = memory.alloc_storage(%n4) max 3216 align 16 {memory.reserve = "80*N*M"} : !memory.storage<?>
  memory.kill %s3 : !memory.storage<?>
  memory.kill %s0 : !memory.storage<?>
  %s5 = memory.alloc_storage(%n5) max 704 align 16 {memory.reserve = "80*N+32"} : !memory.storage<?>
  memory.kill %s1 : !memory.storage<?>
  memory.kill %s4 : !memory.storage<?>
  memory.kill %s5 : !memory.storage<?>
  func.return
}
"""


def test_the_order_is_chosen_among_the_samples_static_plans() -> None:
    """The bound's plan ordered as a program takes 784 bytes at the lower
    ends (N = 1, M = 2); usmp keeps the order of a static plan at a sample
    instead, 736 bytes there, and no more than the bound at the upper ends."""
    lower = {name: lo for name, (lo, _) in RANGES.items()}
    upper = {name: hi for name, (_, hi) in RANGES.items()}
    static, bound_used = _used(CHOICE, "usmp")
    planned, used = _used(CHOICE, "usmp{parametric=true},verify-plan")
    assert used <= bound_used
    assert _check_at(planned, lower) == 736
    assert _check_at(planned, upper) <= bound_used
    module = parse_module(static)
    lifetimes = analyze_module(module)
    (function,) = lifetimes.functions
    buffers, placements, sizes = [], {}, []
    for storage in function.storages:
        buffer = lifetimes.module_buffer(function, storage, pin=False)
        buffers.append(buffer)
        assert storage.pinned is not None
        placements[buffer.id] = Placement(*storage.pinned)
        reserve = storage_reserve(storage.alloc)
        sizes.append(buffer.size if reserve is None else reserve.evaluate(lower))
    problem = Problem(tuple(buffers), lifetimes.pools)
    bound_order = derive_parametric(problem, Solution(placements))
    assert evaluate(bound_order, sizes).total == 784
