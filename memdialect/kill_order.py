"""Use after kill and double kills: the path checks of ``memory.kill``, once per module.

Whether a use of a killed value (or of a view of it) may run after the kill
is a property of paths, not of the kill alone. Asked per kill with xDSL's
``Operation.is_before_in_block`` (a walk along the block) it made every
verification quadratic in the ops of a block. Here the ops are numbered once
(``OpNumbering``, a pre-order walk) and each question costs the nesting
depth, the way MLIR's verifier computes dominance once per region rather
than per operand.

``memory.kill``'s own verifier keeps the checks about the kill alone (a
function argument, a kill inside a loop the value was defined outside of).
The path checks are the dialect's too, but not an op verifier: xDSL 0.74's
blocks keep no op order (MLIR's keep one, invalidated on insertion), so a
kill that asked its block would make verification quadratic again.
``verify_module`` is the dialect's whole verification (every op's verifier,
then the path checks): every memplan tool verifies through it or, as
``memplan-opt`` after each pass, through both halves; ``verify-plan`` runs
``verify_kill_order`` too. ``xdsl-opt`` runs only the op verifiers
(docs/known-limits.md).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from xdsl.ir import Block, Operation
from xdsl.utils.exceptions import VerifyException

from memplan.dialect.diagnostics import at_op
from memplan.dialect.numbering import OpNumbering
from memplan.dialect.op_model import is_function, transitive_views
from memplan.dialect.ops import KillOp, describe
from memplan.dialect.regions import ancestor_in_region, reachable_blocks


@runtime_checkable
class ChecksKillOrder(Protocol):
    """A pass that may end by checking the kill order of the module it leaves
    (``verify-plan``; ``plan`` with its ``verify``): a driver that checks the
    kill order after every pass need not check it again after one whose
    ``kill_order_checked`` is true."""

    @property
    def kill_order_checked(self) -> bool: ...


class _KillOrder:
    """The ops of one root op numbered once, and the CFG reachability asked so far."""

    def __init__(self, root: Operation) -> None:
        self.index: dict[Operation, int] = {}
        for region in root.regions:
            # One numbering across the root's regions: only the order of two
            # ops of one block is ever compared.
            numbering = OpNumbering.of_region(region)
            offset = len(self.index)
            self.index.update((op, offset + i) for op, i in numbering.index.items())
        self._reachable: dict[tuple[Block, Block | None], dict[Block, None]] = {}

    def reachable(self, start: Block, definition_block: Block | None) -> dict[Block, None]:
        """Blocks reached from the end of ``start`` without re-entering the
        defining block (coming back there redefines the value)."""
        key = (start, definition_block)
        found = self._reachable.get(key)
        if found is None:
            found = reachable_blocks(start, definition_block)
            if definition_block is not None:
                found.pop(definition_block, None)
            self._reachable[key] = found
        return found

    def happens_after(self, kill: Operation, op: Operation, definition_block: Block | None) -> bool:
        """May ``op`` execute after ``kill`` on some path (within one function)?"""
        anchor: Operation | None = kill
        while anchor is not None:
            region = anchor.parent_region()
            if region is None:
                return False
            other = ancestor_in_region(op, region)
            if other is not None:
                if other is anchor:
                    # `op` sits in a sibling region of `anchor` (another branch).
                    return False
                anchor_block = anchor.parent_block()
                other_block = other.parent_block()
                assert anchor_block is not None and other_block is not None
                if other_block is anchor_block and self.index[anchor] < self.index[other]:
                    return True
                return other_block in self.reachable(anchor_block, definition_block)
            parent = region.parent_op()
            if parent is None or is_function(parent):
                return False
            anchor = parent
        return False

    def check(self, kill: KillOp) -> None:
        """Raise at the first use of ``kill``'s value (or a view) that may follow it."""
        value = kill.value
        name = describe(value)
        owner = value.owner
        definition_block = owner if isinstance(owner, Block) else owner.parent_block()
        for alias in transitive_views(value):
            for use in alias.uses:
                user = use.operation
                if user is kill or not self.happens_after(kill, user, definition_block):
                    continue
                if isinstance(user, KillOp) and user.value is value:
                    raise at_op(
                        VerifyException(f"{name} is killed twice on one path"),
                        user,
                        (kill, "first kill here"),
                    )
                what = name if alias is value else f"{describe(alias)} (a view of {name})"
                raise at_op(
                    VerifyException(f"{what} is used by {user.name} after its kill"),
                    user,
                    (kill, f"{name} is killed here"),
                )


def verify_kill_order(root: Operation) -> None:
    """Raise a located ``VerifyException`` for the first ``memory.kill`` under
    ``root`` (in walk order) whose value, or a view of it, is used or killed
    again on some path after it. O(ops + uses × nesting depth)."""
    kills = [op for op in root.walk() if isinstance(op, KillOp)]
    if not kills:
        return
    order = _KillOrder(root)
    for kill in kills:
        order.check(kill)


def verify_module(root: Operation) -> None:
    """The ``memory`` dialect's whole verification of ``root``: every op's
    verifier (``root.verify()``), then the path checks of its kills
    (``verify_kill_order``)."""
    root.verify()
    verify_kill_order(root)
