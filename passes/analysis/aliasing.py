"""The one may-alias analysis: which values may hold a value's bytes.

docs/design.md's rule: a value's bytes stay needed while any value that may
alias them is live. The values that may alias a root are the closure of
``classify_use``'s ``ALIAS`` step: views (``memory.alloc_tensor`` and
``memref`` view-like ops, ``memdialect.op_model``), ``scf.if`` /
``scf.index_switch`` / ``scf.execute_region`` results a value is yielded
into, ``scf.for`` / ``scf.while`` iteration arguments and results, ``cf``
block arguments; and, in the value-semantic form ``manifest-alloc`` reads,
the results of calls to kernels declared ``memory.view`` (``kernel_calls``;
a call of any other kernel there only reads its operands).

Who asks it: the lifetime analysis (``alias_closure``, through which
``insert-kills``, ``coalesce``, ``reuse``, ``usmp`` and ``verify-plan`` see
aliases), ``manifest-alloc``'s in-place and loop-buffer decisions
(``AliasAnalysis.needed_at_or_after``), and the in-place rule shared by
``verify-plan``, ``insert-kills`` and ``plan-report``
(``passes.analysis.inplace``). None keeps its own list of aliasing ops.

Use kinds
=========

``classify_use(use)`` sorts every use of an SSA value into one of four kinds,
from what the op model (``memdialect.op_model``) says the user does:

- ``ALIAS``: the user makes new values that hold the same bytes, returned as
  ``targets`` and followed by the lifetime analysis. View-like ops and
  ``memory.alloc_tensor`` (``memdialect.op_model``, the one definition of
  view-like aliasing); branch operands to the successor's block arguments
  (``cf.br``, ``cf.cond_br``, ``cf.switch``); ``scf.for`` init operands to
  the body's iteration arguments and the loop results; ``scf.while`` init
  operands to the ``before`` region's arguments; ``scf.condition`` operands
  to the ``after`` region's arguments and the loop results; ``scf.yield``
  operands to the parent's results (``scf.if``, ``scf.index_switch``,
  ``scf.execute_region``, ``scf.for``) and, in loops, to the arguments of
  the next iteration.
- ``KILL``: ``memory.kill``.
- ``ESCAPE``: a reference to the bytes may outlive anything the analysis can
  see, so the value is live to the end of the function: ``func.return``;
  ``memref.store`` of the memref itself (operand 0); ops that expose the raw
  pointer (``memref.extract_aligned_pointer_as_index``,
  ``memref.extract_strided_metadata``); a terminator yielding out of a region
  op not modelled above; a branch op with successors not modelled above; and
  any other op that produces a value able to hold a reference (anything but
  integers, indices, floats and vectors), e.g. a ``func.call`` returning a
  memref, since that result may be the argument.
- ``PLAIN``: any other use (``memory.invoke``, ``memref.load``,
  ``memref.copy``, a ``func.call`` with scalar results, ...): the bytes are
  needed at that point only.

``writes(use)`` says whether the use may write the bytes (for ``read_only``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType, VectorType
from xdsl.ir import Block, Operation, SSAValue, Use
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects

from memplan.dialect.op_model import (
    branch_successors,
    entry_successors,
    is_control_flow,
    is_function,
    is_plain_reader,
    is_region_terminator,
    is_view_of_operand,
    only_reads,
    returns_from_function,
    stores_operand,
    takes_address,
    terminator_successors,
    writes_operand,
)
from memplan.dialect.ops import InvokeOp, KillOp


class UseKind(Enum):
    """What a use does to the lifetime of the value it uses."""

    PLAIN = "plain"
    ALIAS = "alias"
    KILL = "kill"
    ESCAPE = "escape"


def _is_scalar(value: SSAValue) -> bool:
    return isinstance(value.type, IntegerType | IndexType | AnyFloat | VectorType)


def may_hold_reference(value: SSAValue) -> bool:
    """Could ``value`` refer to bytes (anything but an integer, index, float or vector)?"""
    return not _is_scalar(value)


def _may_hold_reference(op: Operation) -> bool:
    return any(may_hold_reference(result) for result in op.results)


def classify_use(use: Use) -> tuple[UseKind, tuple[SSAValue, ...]]:
    """The kind of ``use`` and, for ``ALIAS``, the values that alias the used value."""
    op = use.operation
    index = use.index
    if isinstance(op, KillOp):
        return UseKind.KILL, ()
    if is_view_of_operand(op, index):
        return UseKind.ALIAS, tuple(op.results)
    if is_plain_reader(op):
        return UseKind.PLAIN, ()
    if returns_from_function(op) or takes_address(op) or stores_operand(op, index):
        return UseKind.ESCAPE, ()
    if writes_operand(op, index) is not None:
        return UseKind.PLAIN, ()
    if op.successors:
        targets = branch_successors(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    targets = entry_successors(op, index)
    if targets is not None:
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if is_region_terminator(op):
        targets = terminator_successors(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if op.has_trait(IsTerminator):
        parent = op.parent_op()
        if parent is not None and not is_function(parent) and _may_hold_reference(parent):
            return UseKind.ESCAPE, ()
        return UseKind.PLAIN, ()
    if _may_hold_reference(op):
        return UseKind.ESCAPE, ()
    return UseKind.PLAIN, ()


def writes(use: Use) -> bool:
    """May ``use`` write the bytes of the value it uses?"""
    op = use.operation
    if isinstance(op, InvokeOp):
        return use.index >= len(op.ins)
    written = writes_operand(op, use.index)
    if written is not None:
        return written
    if only_reads(op) or is_view_of_operand(op, use.index) or is_control_flow(op):
        return False
    effects = get_effects(op)
    if effects is None:
        return True
    return any(
        effect.kind == MemoryEffectKind.WRITE
        and (effect.value is None or effect.value is use.operation.operands[use.index])
        for effect in effects
    )


@dataclass
class Aliases:
    """A closure: the values that may hold the roots' bytes and every use of them.

    ``values`` are in discovery order (roots first); ``uses`` pairs every use
    of those values with its ``UseKind``; ``escapes`` is True when one use is
    an ``ESCAPE`` (a reference may outlive anything the analysis sees).
    """

    values: list[SSAValue] = field(default_factory=list[SSAValue])
    uses: list[tuple[Use, UseKind]] = field(default_factory=list[tuple[Use, UseKind]])
    escapes: bool = False


def _no_kernels(op: Operation) -> UseKind | None:
    return None


class AliasAnalysis:
    """May-alias closures over the IR as it is now (it keeps no state).

    ``kernel_calls(op)`` tells, for a value-semantic call of a kernel, what
    it does with its operands: ``ALIAS`` for a ``memory.view`` kernel (its
    results alias them), ``PLAIN`` for any other kernel (it reads them and
    returns new values); ``None`` for other ops. By default no op is a
    kernel call, which is right for the memory form.
    """

    def __init__(
        self,
        kernel_calls: Callable[[Operation], UseKind | None] = _no_kernels,
        is_before: Callable[[Operation, Operation], bool] = Operation.is_before_in_block,
    ) -> None:
        self.kernel_calls = kernel_calls
        # Order of two ops of one block: xDSL walks the block; a pass that
        # numbers its ops answers in O(1) (manifest-alloc's `_OpOrder`).
        self.is_before = is_before

    def classify(self, use: Use) -> tuple[UseKind, tuple[SSAValue, ...]]:
        """``classify_use``, with value-semantic kernel calls as above."""
        kind = self.kernel_calls(use.operation)
        if kind is UseKind.ALIAS:
            return kind, tuple(use.operation.results)
        if kind is not None:
            return kind, ()
        return classify_use(use)

    def closure(self, roots: Iterable[SSAValue], *, stop_at: Operation | None = None) -> Aliases:
        """The roots and every value that may alias them, with all their uses.

        Breadth-first, deterministic (use lists are in IR order). Uses at
        ``stop_at`` are listed but not followed: a loop whose initial value
        ``manifest-alloc`` lets it take over makes its iteration arguments
        and results new values in those bytes, not readers of the old one.
        """
        result = Aliases()
        seen: set[SSAValue] = set()
        for root in roots:
            if root not in seen:
                seen.add(root)
                result.values.append(root)
        position = 0
        while position < len(result.values):
            value = result.values[position]
            position += 1
            for use in value.uses:
                kind, targets = self.classify(use)
                result.uses.append((use, kind))
                if kind is UseKind.ESCAPE:
                    result.escapes = True
                if use.operation is stop_at:
                    continue
                for target in targets:
                    if target not in seen:
                        seen.add(target)
                        result.values.append(target)
        return result

    def needed_at_or_after(
        self,
        roots: Iterable[SSAValue],
        op: Operation,
        *,
        allowed_at_op: Callable[[Use], bool] = lambda use: False,
    ) -> Use | None:
        """A use that needs the roots' bytes when ``op`` runs or later, if any.

        That is a use of a value that may alias a root which escapes, lies
        outside ``op``'s block, or sits (or is nested in an op) at or after
        ``op`` there, except the uses by ``op`` itself that ``allowed_at_op``
        accepts (an in-place operand, a loop's initial value). Uses by ``op``
        are not followed (``closure``'s ``stop_at``). None means the bytes
        may be overwritten from ``op`` on.
        """
        block = op.parent_block()
        aliases = self.closure(roots, stop_at=op)
        for use, kind in aliases.uses:
            if use.operation is op and allowed_at_op(use):
                continue
            if kind is UseKind.ESCAPE or not self._before(use.operation, op, block):
                return use
        return None

    def _before(self, user: Operation, op: Operation, block: Block | None) -> bool:
        """Is ``user`` (or the op holding it in ``op``'s block) before ``op`` there?"""
        ancestor: Operation | None = user
        while ancestor is not None and ancestor.parent_block() is not block:
            ancestor = ancestor.parent_op()
        return ancestor is not None and ancestor is not op and self.is_before(ancestor, op)


Closure = tuple[list[SSAValue], list[tuple[Use, UseKind]], bool]
"""``alias_closure``'s answer: values, their classified uses, whether one escapes."""


def alias_closure(root: SSAValue) -> Closure:
    """``root`` and every value that may alias it (memory form), every use of
    those, and whether one escapes: what the lifetime analysis follows."""
    aliases = AliasAnalysis().closure((root,))
    return aliases.values, aliases.uses, aliases.escapes


def alias_closure_reusing(root: SSAValue, known: Mapping[SSAValue, Closure]) -> Closure:
    """``alias_closure(root)``, reusing ``known`` closures of the values that
    ``root``'s uses alias (a storage's tensors) when each is closed: nothing
    but itself. The breadth-first walk then lists ``root``'s uses and those
    values' uses in turn, so the answer is the same; otherwise it walks."""
    analysis = AliasAnalysis()
    values = [root]
    seen = {root}
    uses: list[tuple[Use, UseKind]] = []
    escapes = False
    for use in root.uses:
        kind, targets = analysis.classify(use)
        uses.append((use, kind))
        escapes = escapes or kind is UseKind.ESCAPE
        for target in targets:
            if target not in seen:
                seen.add(target)
                values.append(target)
    for value in values[1:]:
        closure = known.get(value)
        if closure is None or len(closure[0]) != 1:
            return alias_closure(root)
        uses.extend(closure[1])
        escapes = escapes or closure[2]
    return values, uses, escapes
