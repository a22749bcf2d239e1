"""insert-kills, verify-plan and plan-report on random and written programs.

``insert-kills`` output verifies, is idempotent and changes no conflict;
``verify-plan`` rejects every planted overlap of two conflicting storages,
naming both; ``plan-report`` follows its schema and writes nothing on failure.
"""

from __future__ import annotations

import io
import itertools
import json
import random
import typing
from contextlib import redirect_stderr
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lifetime_programs import (
    PROPERTY_SETTINGS,
    RECURSIVE,
    TENSOR,
    cfg_programs,
    function_named,
    programs,
)
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect import AllocStorageOp, KillOp, PoolOp
from memplan.passes.analysis import (
    LiveInterval,
    analyze_function,
)
from memplan.passes.flag_help import FLAG_HELP
from memplan.passes.plan_report import PlanReportPass, gather_report
from memplan.passes.report_formats import REPORT_FORMATS
from memplan.passes.verify_plan import VerifyPlanPass
from memplan_testing import (
    examples,
    memplan_context,
    parse_module,
    print_module,
    run_passes,
)

# ---------------------------------------------------------------------------
# insert-kills
# ---------------------------------------------------------------------------


def _conflicts(module: ModuleOp) -> set[tuple[str, str]]:
    lifetimes = analyze_function(function_named(module))
    buffers = [s.buffer() for s in lifetimes.storages]
    return {(a.id, b.id) for a, b in itertools.combinations(buffers, 2) if a.conflicts_with(b)}


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(st.one_of(programs, cfg_programs))
def test_insert_kills_verifies_is_idempotent_and_keeps_conflicts(source: str) -> None:
    module = parse_module(source, verify=True)
    before = _conflicts(module)
    once = print_module(run_passes(module, "insert-kills"))  # _run verifies the output
    twice = print_module(run_passes(parse_module(once, verify=True), "insert-kills"))
    assert once == twice
    assert _conflicts(parse_module(once, verify=True)) == before


def test_insert_kills_kills_every_local_value() -> None:
    """Straight-line values that neither escape nor leave their block all get a kill."""
    module = parse_module(
        f"""
        func.func private @use({TENSOR})
        func.func @main() {{
          %a = memory.alloc_storage : !memory.storage<16>
          %ta = memory.alloc_tensor %a[0] : !memory.storage<16> -> {TENSOR}
          %b = memory.alloc_storage : !memory.storage<16>
          %tb = memory.alloc_tensor %b[0] : !memory.storage<16> -> {TENSOR}
          memory.invoke @use ins(%tb : {TENSOR})
          memory.invoke @use ins(%ta : {TENSOR})
          func.return
        }}
        """,
        verify=True,
    )
    run_passes(module, "insert-kills")
    killed = [op.value.name_hint for op in module.walk() if isinstance(op, KillOp)]
    assert killed == ["tb", "b", "ta", "a"]


# ---------------------------------------------------------------------------
# verify-plan
# ---------------------------------------------------------------------------


def _pin_all(module: ModuleOp, offsets: dict[str, int]) -> None:
    """Pin every storage of ``module`` at ``offsets[name]`` in the pool ``@pool``."""
    for op in module.walk():
        if isinstance(op, AllocStorageOp):
            op.pin("pool", offsets[op.storage.name_hint or ""])


def _verify_plan(module: ModuleOp) -> None:
    VerifyPlanPass().apply(memplan_context(), module)


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(programs, st.randoms(use_true_random=False))
def test_verify_plan_catches_every_planted_overlap(source: str, rng: random.Random) -> None:
    module = parse_module(source, verify=True)
    Rewriter.insert_op(PoolOp("pool"), InsertPoint.at_start(module.body.block))
    lifetimes = analyze_function(function_named(module))
    buffers = {s.name: s.buffer() for s in lifetimes.storages}
    names = list(buffers)
    # A plan without overlaps: every storage in its own 64-byte slot.
    distinct = {name: 64 * i for i, name in enumerate(names)}
    _pin_all(module, distinct)
    module.verify()
    if any(s.carried_across_iterations for s in lifetimes.storages):
        # Two instances live at once: no plan is right, whatever the offsets.
        with pytest.raises(PassFailedException, match="two instances of one storage"):
            _verify_plan(module)
        return
    _verify_plan(module)
    pairs = list(itertools.combinations(names, 2))
    for first, second in rng.sample(pairs, min(4, len(pairs))):
        planted = dict(distinct)
        planted[second] = planted[first]
        _pin_all(module, planted)
        if buffers[first].conflicts_with(buffers[second]):
            with pytest.raises(PassFailedException) as failure:
                _verify_plan(module)
            message = str(failure.value)
            assert f"%{first} " in message and f"%{second} " in message
            assert "share bytes" in message
        else:
            _verify_plan(module)


def test_verify_plan_refuses_a_storage_past_its_pools_used_size() -> None:
    """The pass's own check, on a plan changed in memory (the alloc_storage
    verifier, which refuses the same, never runs): %b moved from 262144 to
    262208 ends at 262212, past 262148, and overlaps nothing."""
    module = parse_module(
        """
memory.pool @workspace used 262148
func.func @f() {
  %a = memory.alloc_storage at @workspace[0] : !memory.storage<262144>
  %b = memory.alloc_storage at @workspace[262144] : !memory.storage<4>
  memory.kill %b : !memory.storage<4>
  memory.kill %a : !memory.storage<262144>
  func.return
}
""",
        verify=True,
    )
    _verify_plan(module)
    [b] = [op for op in module.walk() if isinstance(op, AllocStorageOp) and op.byte_size == 4]
    b.pin("workspace", 262208)
    with pytest.raises(PassFailedException) as failure:
        _verify_plan(module)
    assert str(failure.value) == (
        "verify-plan: storage %b in @f (bytes [262208, 262212) of @workspace) runs past "
        "the pool's used size of 262148 bytes"
    )


# ---------------------------------------------------------------------------
# plan-report
# ---------------------------------------------------------------------------

REPORTED = """
memory.pool @sram size 256
func.func @f() {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %b = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %u = memory.alloc_storage : !memory.storage<32>
  memory.kill %b : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
"""


def test_plan_report_json_follows_the_schema() -> None:
    text = REPORT_FORMATS["json"].write(gather_report(parse_module(REPORTED, verify=True)))
    report = json.loads(text)
    (function,) = report["functions"]
    assert function["name"] == "f"
    pools = {p["name"]: p for p in function["pools"]}
    assert pools["sram"] == {
        "name": "sram",
        "size": 256,
        "used": 128,
        "lower_bound": 128,
        "no_planning": 128,
        "base_alignment": 64,
        "buffer_count": 2,
    }
    assert pools["(unplanned)"]["used"] == 32
    buffers = {b["name"]: b for b in function["buffers"]}
    assert {
        key: buffers["b"][key] for key in ("size", "alignment", "start", "end", "pool", "offset")
    } == {
        "size": 64,
        "alignment": 64,
        "start": 1,
        "end": 3,
        "pool": "sram",
        "offset": 64,
    }
    assert buffers["u"]["pool"] == "(unplanned)" and buffers["u"]["offset"] is None


def test_plan_report_leaves_the_ir_unchanged_and_writes_stderr() -> None:
    module = parse_module(REPORTED, verify=True)
    before = print_module(module)
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        run_passes(module, "plan-report")
    assert print_module(module) == before
    assert "@sram" in stderr.getvalue()


def test_plan_report_writes_nothing_when_it_fails(tmp_path: Path) -> None:
    module = parse_module(RECURSIVE, verify=True)
    output = tmp_path / "report.txt"
    with pytest.raises(PassFailedException):
        PlanReportPass(output=str(output)).apply(memplan_context(), module)
    assert not output.exists()


def test_plan_report_rejects_unknown_formats() -> None:
    with pytest.raises(
        ValueError, match="format must be one of text, json, .* \\(got 'svg-ish'\\)"
    ):
        PlanReportPass(format="svg-ish")


def test_plan_report_format_choices_are_the_registry() -> None:
    """``format`` is a typed choice made from ``REPORT_FORMATS``: pipelines
    parse it, and ``--help`` and passes.md list the formats."""
    choices = typing.get_args(typing.get_type_hints(PlanReportPass)["format"])
    assert choices == tuple(REPORT_FORMATS)
    assert "format=text|json|svg|trace|c-header (default: text)" in FLAG_HELP["plan-report"]


def test_plan_report_cannot_write(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "r.txt"
    with pytest.raises(PassFailedException, match="cannot write"):
        PlanReportPass(output=str(target)).apply(
            memplan_context(), parse_module(REPORTED, verify=True)
        )


def test_a_storage_escaping_in_a_cfg_loop_outlives_the_next_trip() -> None:
    """%s escapes in the loop body; on the next trip %y (loop header, numbered
    before %s) is live while %s still is, so the two must conflict."""
    module = parse_module(
        """
        func.func @main(%c : i1) {
          cf.br ^loop
        ^loop:
          %y = memory.alloc_storage : !memory.storage<64>
          %yt = memory.alloc_tensor %y[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%yt) : (memref<16xf32>) -> ()
          memory.kill %y : !memory.storage<64>
          cf.cond_br %c, ^body, ^exit
        ^body:
          %s = memory.alloc_storage : !memory.storage<64>
          %st = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          %r = "test.op"(%st) : (memref<16xf32>) -> memref<16xf32>
          cf.br ^loop
        ^exit:
          func.return
        }
        """,
        verify=True,
    )
    lifetimes = analyze_function(function_named(module))
    y = lifetimes.storage_named("y")
    s = lifetimes.storage_named("s")
    assert s.escapes
    assert s.interval == LiveInterval(1, 11)
    assert y.buffer().conflicts_with(s.buffer())
