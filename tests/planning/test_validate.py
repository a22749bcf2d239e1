"""The plan validator: each rule, named precisely, and a brute-force cross-check."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.validate import validate
from memplan_testing import examples
from tests.planning.strategies import buffers


def kinds(problem: Problem, placements: dict[str, Placement]) -> list[str]:
    return [f.kind for f in validate(problem, Solution(placements))]


def test_valid_plan_has_no_findings() -> None:
    problem = Problem((Buffer("a", 8, 0, 2), Buffer("b", 8, 1, 3), Buffer("c", 8, 2, 4)))
    placements = {
        "a": Placement("workspace", 0),
        "b": Placement("workspace", 8),
        "c": Placement("workspace", 0),
    }
    assert validate(problem, Solution(placements)) == []


def test_overlap_names_both_buffers_ranges_and_lifetimes() -> None:
    problem = Problem((Buffer("a", 8, 0, 3), Buffer("b", 8, 2, 5)))
    findings = validate(
        problem, Solution({"a": Placement("workspace", 0), "b": Placement("workspace", 4)})
    )
    assert [f.kind for f in findings] == ["overlap"]
    assert findings[0].buffers == ("a", "b")
    message = findings[0].message
    assert "'a' (bytes [0, 8) of @workspace, live [0, 3))" in message
    assert "'b' (bytes [4, 12) of @workspace, live [2, 5))" in message


def test_touching_lifetimes_and_exclusive_branches_do_not_conflict() -> None:
    problem = Problem(
        (
            Buffer("a", 8, 0, 2),
            Buffer("b", 8, 2, 4),
            Buffer("then", 8, 0, 4, branch=((1, 0),)),
            Buffer("else", 8, 0, 4, branch=((1, 1),)),
        )
    )
    placements = {
        "a": Placement("workspace", 0),
        "b": Placement("workspace", 0),
        "then": Placement("workspace", 8),
        "else": Placement("workspace", 8),
    }
    assert validate(problem, Solution(placements)) == []


def test_alignment_bounds_and_unplaced() -> None:
    pools = (Pool("sram", size=32, alignment=16), Pool("dram"))
    problem = Problem(
        (
            Buffer("a", 8, 0, 2, alignment=4),
            Buffer("b", 8, 0, 2),
            Buffer("c", 8, 0, 2, alignment=8),
            Buffer("d", 8, 0, 2),
        ),
        pools,
    )
    placements = {
        "a": Placement("dram", 2),  # not a multiple of 4
        "b": Placement("sram", 8),  # not a multiple of the pool's 16
        "c": Placement("sram", 32),  # past the end of sram
    }
    findings = validate(problem, Solution(placements))
    by_kind = {(f.kind, f.buffers) for f in findings}
    assert ("misaligned", ("a",)) in by_kind
    assert ("misaligned", ("b",)) in by_kind
    assert ("out-of-bounds", ("c",)) in by_kind
    assert ("unplaced", ("d",)) in by_kind
    assert any("pool alignment 16" in f.message for f in findings)
    assert any("runs past the end of @sram (size 32)" in f.message for f in findings)


def test_pool_rules() -> None:
    pools = (
        Pool("npu_only", targets=("npu",)),
        Pool("flash", access="ro"),
        Pool("dram"),
    )
    problem = Problem(
        (
            Buffer("cpu_buffer", 8, 0, 2),
            Buffer("written", 8, 0, 2),
            Buffer("picky", 8, 0, 2, candidates=("dram",)),
            Buffer("const", 8, 0, 2, read_only=True),
        ),
        pools,
    )
    placements = {
        "cpu_buffer": Placement("npu_only", 0),
        "written": Placement("flash", 0),
        "picky": Placement("flash", 64),
        "const": Placement("flash", 8),
        "ghost": Placement("dram", 0),
    }
    findings = validate(problem, Solution(placements))
    messages = {f.buffers[0]: f.message for f in findings}
    assert "device 'cpu' is not in its targets" in messages["cpu_buffer"]
    assert "read-only" in messages["written"]
    assert "not among its candidates [@dram]" in messages["picky"]
    assert "const" not in messages
    assert "not a buffer of the problem" in messages["ghost"]
    assert (
        kinds(problem, {**placements, "picky": Placement("nowhere", 0)}).count("unknown-pool") == 1
    )


def test_moved_pinned_buffer() -> None:
    problem = Problem((Buffer("p", 8, 0, 2, pinned_offset=16),))
    assert kinds(problem, {"p": Placement("workspace", 0)}) == ["moved-pinned"]
    assert kinds(problem, {"p": Placement("workspace", 16)}) == []


@settings(max_examples=examples(80), deadline=None)
@given(buffers(max_buffers=14), st.data())
def test_overlap_sweep_matches_all_pairs(items: list[Buffer], data: st.DataObject) -> None:
    problem = Problem(tuple(items))
    placements = {b.id: Placement("workspace", data.draw(st.integers(0, 60))) for b in items}
    expected = set()
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            pa, pb = placements[a.id], placements[b.id]
            shares = pa.offset < pb.offset + b.size and pb.offset < pa.offset + a.size
            if a.size and b.size and shares and a.conflicts_with(b):
                expected.add(tuple(sorted((a.id, b.id))))
    found = {f.buffers for f in validate(problem, Solution(placements)) if f.kind == "overlap"}
    assert found == expected
