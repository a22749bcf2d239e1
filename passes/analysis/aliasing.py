"""The one may-alias analysis: which values may hold a value's bytes.

docs/design.md's rule: a value's bytes stay needed while any value that may
alias them is live. The values that may alias a root are the closure of
``flow.classify_use``'s ``ALIAS`` step: views (``memory.alloc_tensor`` and
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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, SSAValue, Use

from memplan.passes.analysis.flow import UseKind, classify_use


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
        """``flow.classify_use``, with value-semantic kernel calls as above."""
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


def alias_closure(root: SSAValue) -> tuple[list[SSAValue], list[tuple[Use, UseKind]], bool]:
    """``root`` and every value that may alias it (memory form), every use of
    those, and whether one escapes: what the lifetime analysis follows."""
    aliases = AliasAnalysis().closure((root,))
    return aliases.values, aliases.uses, aliases.escapes
