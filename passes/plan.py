"""``plan``: the whole planning pipeline as one pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from memplan.passes.pass_options import check_options
from memplan.passes.planning.algorithms import DEFAULT_BUDGET, AlgorithmName


@dataclass(frozen=True)
class PlanPass(ModulePass):
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
    - `algorithm` (`greedy-by-size|greedy-by-conflicts|hill-climb|exact|auto`,
      default `auto`): the offset algorithm of `coalesce` and `usmp`.
    - `budget` (integer, default 60000): search nodes for each of
      `coalesce` and `usmp` (the plan is the same on every machine).
    - `timeout` (seconds, no default): an opt-in wall-clock limit for each of
      `coalesce` and `usmp`, as theirs.
    - `coalesce` (bool, default true): run `coalesce` (false: `usmp` alone,
      which never uses less memory but gives one storage per tensor).
    - `verify` (bool, default true): end with `verify-plan` (false: skip it).
    """

    name = "plan"

    algorithm: AlgorithmName = "auto"
    budget: int = DEFAULT_BUDGET
    timeout: float | int | None = None
    coalesce: bool = True
    verify: bool = True

    def __post_init__(self) -> None:
        check_options(self, non_negative=("budget", "timeout"))

    def pipeline(self) -> str:
        """The pipeline this pass runs, in `-p` syntax."""
        options = f"algorithm={self.algorithm} budget={self.budget}"
        if self.timeout is not None:
            options += f" timeout={self.timeout}"
        steps = ["manifest-alloc", "insert-kills"]
        if self.coalesce:
            steps.append(f"coalesce{{{options}}}")
        steps.append(f"usmp{{{options}}}")
        if self.verify:
            steps.append("verify-plan")
        return ",".join(steps)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Through the registry, by name: one pass module never imports another.
        from memplan.passes import get_all_passes

        PassPipeline.parse_spec(get_all_passes(), self.pipeline()).apply(ctx, op)
