"""A memplan pass's options are checked when the pass is built: from Python,
from a ``-p`` pipeline or from a ``memplan-opt`` flag, a bad option is a
``ValueError`` naming the pass, the option and what it takes, before any
pass runs (never a ``KeyError`` at apply time, nor a silent pass on a module
with nothing to plan)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
from xdsl.passes import ModulePass, PassPipeline

from memplan.dialect.context import memplan_context
from memplan.passes import get_all_passes
from memplan.passes.coalesce import CoalescePass
from memplan.passes.pass_options import PlanningPassOptions
from memplan.passes.plan import PlanPass
from memplan.passes.plan_report import PlanReportPass
from memplan.passes.planning.algorithms import PlanOptions
from memplan.passes.reuse import ReusePass
from memplan.passes.usmp import UsmpPass
from memplan_testing import parse_module

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_an_unknown_algorithm_fails_when_the_pass_is_built() -> None:
    with pytest.raises(ValueError) as info:
        UsmpPass(algorithm="fast")  # pyright: ignore[reportArgumentType]
    assert str(info.value) == (
        "usmp: algorithm must be one of greedy-by-size, greedy-by-conflicts, "
        "hill-climb, exact, auto (got 'fast')"
    )


def _wrong_value(hint: Any) -> object:
    """A value of the wrong kind for an option of type ``hint``."""
    members = [m for m in typing.get_args(hint) if m is not type(None)] or [hint]
    if typing.get_origin(members[0]) is Literal:
        return "nope"
    if members == [bool]:
        return "yes"
    if str in members:
        return 3
    return "many"  # int, or a number


def _options() -> list[tuple[str, str]]:
    return [
        (name, field.name)
        for name, factory in get_all_passes().items()
        for field in dataclasses.fields(factory())
    ]


@pytest.mark.parametrize(("name", "option"), _options())
def test_every_option_of_every_pass_is_checked(name: str, option: str) -> None:
    pass_class = get_all_passes()[name]()
    value = _wrong_value(typing.get_type_hints(pass_class)[option])
    with pytest.raises(ValueError) as info:
        pass_class(**{option: value})
    assert str(info.value).startswith(f"{name}: {option.replace('_', '-')} must be ")
    assert f"(got {value!r}" in str(info.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: UsmpPass(timeout=-1), "usmp: timeout must be non-negative (got -1)"),
        (lambda: CoalescePass(timeout=-0.5), "coalesce: timeout must be non-negative (got -0.5)"),
        (lambda: PlanPass(timeout=-2), "plan: timeout must be non-negative (got -2)"),
        (lambda: UsmpPass(budget=-1), "usmp: budget must be non-negative (got -1)"),
        (lambda: CoalescePass(budget=-3), "coalesce: budget must be non-negative (got -3)"),
        (lambda: PlanPass(budget=-4), "plan: budget must be non-negative (got -4)"),
        (lambda: ReusePass(match_range=-1), "reuse: match-range must be non-negative (got -1)"),
        (
            lambda: PlanReportPass(format="svg", prefix="app"),
            "plan-report: option 'prefix' applies to format=c-header, not 'svg'",
        ),
    ],
)
def test_values_a_type_cannot_rule_out(build: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value) == message


def test_good_options_build() -> None:
    assert UsmpPass(algorithm="exact", timeout=0).timeout == 0
    # No timeout by default (no wall clock), and budget=0 is a budget.
    assert UsmpPass(budget=0).timeout is None
    assert PlanReportPass(format="c-header", prefix="app", output=None).prefix == "app"


def test_a_pipeline_with_a_bad_option_fails_before_any_pass() -> None:
    """xDSL's own parser builds the passes: the check runs there too."""
    with pytest.raises(ValueError, match="usmp: timeout must be non-negative"):
        PassPipeline.parse_spec(get_all_passes(), "manifest-alloc,usmp{timeout=-1}")


def test_xdsl_needs_a_path_quoted() -> None:
    """docs/passes.md: xDSL reads numbers, words and lists bare, a path only
    in double quotes (memplan-opt quotes bare values itself)."""
    from xdsl.utils.exceptions import ArgSpecParseError

    with pytest.raises(ArgSpecParseError):
        PassPipeline.parse_spec(get_all_passes(), "plan-report{format=json output=out/x.json}")
    [report] = PassPipeline.parse_spec(
        get_all_passes(), 'plan-report{format=json output="out/x.json"}'
    ).passes
    assert report == PlanReportPass(format="json", output="out/x.json")
    [usmp] = PassPipeline.parse_spec(
        get_all_passes(), "usmp{algorithm=greedy-by-size timeout=1.5}"
    ).passes
    assert usmp == UsmpPass(algorithm="greedy-by-size", timeout=1.5)


def test_a_pass_that_cannot_plan_raises_pass_failed() -> None:
    """A failure on the input (not on the options) is xDSL's
    PassFailedException carrying the diagnostic."""
    from xdsl.utils.exceptions import PassFailedException

    module = parse_module(
        """
        memory.pool @small size 64 targets ["cpu"]
        func.func @f() {
          %s = memory.alloc_storage : !memory.storage<128>
          memory.kill %s : !memory.storage<128>
          func.return
        }
        """,
        verify=True,
    )
    pipeline: tuple[ModulePass, ...] = (UsmpPass(algorithm="greedy-by-size"),)
    with pytest.raises(PassFailedException, match=r"storage %s in @f \(128 bytes.*fits in none"):
        PassPipeline(pipeline).apply(memplan_context(), module)


def test_memplan_opt_reports_a_bad_option_before_any_remark() -> None:
    """usmp on value-semantic input remarks that it has nothing to plan; a
    bad option is reported instead, alone."""
    result = subprocess.run(
        [str(BIN / "memplan-opt"), str(REPO / "examples" / "mlp.mlir"), "--usmp=timeout=-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "memplan-opt: error: in --usmp=timeout=-1: usmp: timeout must be non-negative (got -1)\n"
    )


def test_plan_passes_every_planning_option_to_coalesce_and_usmp() -> None:
    """One option set (``PlanningPassOptions``): `plan` hands all of it to both."""
    plan = PlanPass(
        algorithm="hill-climb",
        budget=7,
        timeout=2,
        seed=3,
        iterations=11,
        minimize=False,
        exact_max_buffers=9,
    )
    steps = {step.name: step for step in plan.passes()}
    assert list(steps) == ["manifest-alloc", "insert-kills", "coalesce", "usmp", "verify-plan"]
    for name in ("coalesce", "usmp"):
        step = steps[name]
        assert isinstance(step, CoalescePass | UsmpPass)
        assert step.planning_options() == plan.planning_options()
        assert step.plan_options() == PlanOptions(
            budget=7, timeout=2, seed=3, iterations=11, minimize=False, exact_max_buffers=9
        )
    assert [s.name for s in PlanPass(coalesce=False, verify=False).passes()] == [
        "manifest-alloc",
        "insert-kills",
        "usmp",
    ]


@pytest.mark.parametrize("name", ["usmp", "coalesce", "plan"])
def test_planning_options_parse_and_are_checked_alike(name: str) -> None:
    spec = f"{name}{{iterations=5 minimize=false exact-max-buffers=3 seed=2}}"
    (built,) = PassPipeline.parse_spec(get_all_passes(), spec).passes
    assert isinstance(built, PlanningPassOptions)
    assert built.plan_options() == PlanOptions(
        seed=2, iterations=5, minimize=False, exact_max_buffers=3
    )
    with pytest.raises(ValueError, match=f"^{name}: iterations must be non-negative \\(got -1\\)$"):
        PassPipeline.parse_spec(get_all_passes(), f"{name}{{iterations=-1}}")


def test_parse_pipeline_composes_xdsl_and_memplan_passes_with_memplans_messages() -> None:
    """memplan.tools.pipeline: xDSL's canonicalize and memplan's passes in
    one pipeline, run; a bad option value or a misspelt option gives the
    message memplan-opt -p prints, not xDSL's type error."""
    from memplan.dialect.context import memplan_context
    from memplan.tools.pipeline import PipelineError, parse_pipeline
    from memplan_testing import parse_module

    module = parse_module((REPO / "examples" / "mlp.mlir").read_text(), verify=True)
    parse_pipeline("canonicalize,plan{algorithm=exact}").apply(memplan_context(), module)
    assert "memory.pool @workspace_cpu" in str(module)
    with pytest.raises(PipelineError) as bad_value:
        parse_pipeline("canonicalize,usmp{algorithm=exakt}")
    assert str(bad_value.value) == (
        "usmp: algorithm must be one of greedy-by-size, greedy-by-conflicts, hill-climb, "
        "exact, auto (got 'exakt')"
    )
    with pytest.raises(PipelineError, match=r"usmp: unknown option 'algoritm' \(did you mean"):
        parse_pipeline("usmp{algoritm=exact}")
