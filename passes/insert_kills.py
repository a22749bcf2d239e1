"""``insert-kills``: a ``memory.kill`` right after each last use (Relax KillAfterLastUse)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from memplan.dialect.ops import AllocStorageOp, AllocTensorOp, KillOp
from memplan.passes.analysis import (
    FunctionLifetimes,
    KillPoint,
    Lifetime,
    analyze_function,
)
from memplan.passes.analysis.forms import warn_value_semantic
from memplan.passes.analysis.inplace import in_place_sources
from memplan.passes.analysis.symbols import SymbolCache


def _ordered_kills(lifetimes: FunctionLifetimes) -> list[tuple[KillPoint, list[Lifetime]]]:
    """Kill points in first-seen order, each with its values: tensors, then storages.

    Tensors come first so that no tensor is killed after its storage (a
    storage kill ends its tensors: killing one afterwards is a use after kill).
    """
    groups: dict[Operation | Block, tuple[KillPoint, list[Lifetime]]] = {}
    symbols = SymbolCache()
    # A tensor whose bytes an in-place result took over lives on as that
    # result: killing it would end the result's bytes too.
    taken_over = {
        a.value
        for storage in lifetimes.storages
        for a in in_place_sources(storage.tensors, symbols, lifetimes.numbering).values()
    }
    # A pinned (planned) storage whose every tensor is already killed, and
    # which nothing else uses, is dead after the last of those kills (a
    # storage lives as long as its tensors): a kill of its own would change
    # nothing. This keeps `--plan` on a planned module from adding kills to
    # the storages usmp split out of a merged one (their tensors carry the
    # kills). Unplanned storages still get theirs, as they always did.
    dead = {
        storage.value
        for storage in lifetimes.storages
        if isinstance(storage.op, AllocStorageOp)
        and storage.op.pinned is not None
        and storage.tensors
        and all(t.kills for t in storage.tensors)
        and all(isinstance(use.operation, AllocTensorOp) for use in storage.value.uses)
    }
    for lifetime in [*lifetimes.tensors, *lifetimes.storages]:
        if lifetime.value in taken_over or lifetime.value in dead:
            continue
        for point in lifetimes.kill_points(lifetime):
            key = point.after if point.after is not None else point.block_start
            assert key is not None
            groups.setdefault(key, (point, []))[1].append(lifetime)
    return list(groups.values())


@dataclass(frozen=True)
class InsertKillsPass(ModulePass):
    """Insert a `memory.kill` right after the last use of each tensor and storage.

    Uses, aliases and scopes follow the one lifetime definition
    (`passes.analysis`): a use of a view, of a block argument or region
    result the value flows into, or of a tensor carved from a storage, is a
    use of the value; a use inside a nested region counts at the outermost
    op of that region in the value's scope, so a value used in a loop is
    killed after the loop and one used in an `scf.if` branch after the
    `scf.if`.

    Placement: in a single-block scope, right after the op holding the last
    use. In a multi-block scope (`cf` branches), after the last use in each
    block where the value dies, and at the start of a successor block that
    it enters dead from a block it is live out of, when every predecessor of
    that block has it live out.

    No kill is inserted for: escaping values (returned, stored, captured);
    values already killed (a tensor also counts as killed when its storage
    is); values yielded out of their region or passed as a branch argument
    (the kill would need another value or a new block); a last use that is a
    terminator; a pinned storage whose every tensor is already killed and
    which nothing else uses (it is dead after those kills: so `--plan` on a
    planned module adds nothing to the storages usmp split); a tensor whose
    bytes an in-place result took over
    (`memory.inplace_of`: they live on as that result). Tensors are killed before their storage at the same point.
    Running the pass twice changes nothing: every value it can kill is
    killed after the first run.

    Options: none.
    """

    name = "insert-kills"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_value_semantic(op, self.name)
        functions = [
            func for func in op.walk() if isinstance(func, FuncOp) and not func.is_declaration
        ]
        for func in functions:
            lifetimes = analyze_function(func, pools=())
            for point, killed in _ordered_kills(lifetimes):
                Rewriter.insert_op([KillOp(lt.value) for lt in killed], point.insert_point())
