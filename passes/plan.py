"""``plan``: the whole planning pipeline as one pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from memplan.passes.analysis.handoff import ProvidesLifetimes, TakesLifetimes
from memplan.passes.analysis.module_lifetimes import ModuleLifetimes
from memplan.passes.pass_options import PlanningPassOptions, check_options


@dataclass(frozen=True)
class PlanPass(PlanningPassOptions, ModulePass):
    """Plan memory from value-semantic kernel calls to pinned offsets, in one pass.

    Runs `manifest-alloc`, `insert-kills`, `coalesce`, `usmp` and
    `verify-plan`, in that order (like MLIR's pipeline passes that stand for
    a fixed list of passes): `memplan-opt --plan file.mlir` is
    `memplan-opt --manifest-alloc --insert-kills --coalesce --usmp --verify-plan
    file.mlir`. The last step checks the plan independently of the planner
    (overlaps, and writes over bytes still needed: `verify-plan`), so an
    unsound plan fails the run instead of leaving `memplan-opt`.
    The passes are taken from memplan's registry by name, so each behaves
    exactly as on its own; see them for what each step does. Input already
    in memory form passes through `manifest-alloc` unchanged.

    Options:
    - `algorithm`, `budget`, `timeout`, `seed`, `iterations`, `minimize`,
      `exact-max-buffers`: the planning options of `coalesce` and `usmp`
      (`passes.pass_options.PlanningPassOptions`), passed to both as they
      are: `budget` and `timeout` hold for each of the two passes, so the
      plan is the same on every machine unless a `timeout` is given.
    - `coalesce` (bool, default true): run `coalesce` (false: `usmp` alone,
      which never uses less memory but gives one storage per tensor).
    - `verify` (bool, default true): end with `verify-plan` (false: skip it).
    - `parametric` (bool, default false): `usmp`'s `parametric`: offsets of
      storages whose sizes depend on the dims as functions of the dims.
    """

    name = "plan"

    coalesce: bool = True
    verify: bool = True
    parametric: bool = False

    def __post_init__(self) -> None:
        check_options(self, non_negative=self.NON_NEGATIVE)

    @property
    def kill_order_checked(self) -> bool:
        """With `verify`, the last step checks the kill order of the module the
        pass leaves (`verify-plan`): `memplan-opt` need not check it again."""
        return self.verify

    def passes(self) -> tuple[ModulePass, ...]:
        """The passes this pass runs, built through memplan's registry (one
        pass module never imports another) with this pass's planning options."""
        from memplan.passes import get_all_passes

        registry = get_all_passes()

        def build(name: str, **options: Any) -> ModulePass:
            return registry[name]()(**options)

        planning = self.planning_options()
        steps = [build("manifest-alloc"), build("insert-kills")]
        if self.coalesce:
            steps.append(build("coalesce", **planning))
        steps.append(build("usmp", **planning, parametric=self.parametric))
        if self.verify:
            steps.append(build("verify-plan"))
        return tuple(steps)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # The passes one after the other, as a PassPipeline without callback
        # runs them; `usmp` hands its lifetime analysis of the module it
        # leaves to `verify-plan` (passes.analysis.handoff), which would
        # otherwise compute the same again.
        lifetimes: ModuleLifetimes | None = None
        for step in self.passes():
            if lifetimes is not None and isinstance(step, TakesLifetimes):
                step.apply_with_lifetimes(ctx, op, lifetimes)
                lifetimes = None
            elif isinstance(step, ProvidesLifetimes):
                lifetimes = step.apply_providing_lifetimes(ctx, op)
            else:
                step.apply(ctx, op)
                lifetimes = None
