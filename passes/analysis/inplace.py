"""In-place pairs: a tensor carved over an operand whose bytes it may take.

`manifest-alloc` carves a result of a `memory.inplace` kernel at the offset
of the operand it replaces (marking the `memory.alloc_tensor` with
`memory.inplace_of`); both tensors then share bytes while live at the
invoke. `verify-plan` accepts that overlap and `insert-kills` does not kill
the operand's tensor there (its bytes live on as the result) only when
``declared_in_place`` holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from memplan.dialect.numbering import OpNumbering
from memplan.dialect.ops import INPLACE_OF_ATTR, InvokeOp, inplace_pairs
from memplan.passes.analysis.aliasing import UseKind
from memplan.passes.analysis.lifetime_types import TensorLifetime
from memplan.passes.analysis.symbols import SymbolCache


def _pairs(decl: Operation | None) -> frozenset[tuple[int, int]]:
    """The (result, operand) pairs ``decl``'s `memory.inplace` lists."""
    return frozenset(inplace_pairs(decl if isinstance(decl, func.FuncOp) else None))


def declared_in_place(
    a: TensorLifetime,
    b: TensorLifetime,
    symbols: SymbolCache,
    numbering: OpNumbering,
) -> bool:
    """Is ``b`` carved in place of ``a`` as a kernel allows?

    ``b`` carries ``memory.inplace_of = o``, is result ``r`` of an invoke
    whose declaration lists the pair ``(r, o)`` in ``memory.inplace``, the
    invoke's operand ``o`` is ``a`` (or a value that may alias it: the one
    alias analysis, ``passes.analysis.aliasing``, through ``a.uses``), both
    sit at the same offset, nothing that may alias ``a`` is used after that
    invoke or escapes, and every operand of the invoke holding such a value
    is declared shareable with ``r`` (docs/dialect.md: the same value at an
    undeclared operand would be overwritten while the kernel reads it).
    ``numbering`` is the function's: the order of two ops costs O(1).
    """
    operand = b.alloc.attributes.get(INPLACE_OF_ATTR)
    if not isinstance(operand, IntegerAttr) or a.offset != b.offset:
        return False
    o = operand.value.data
    for use, _ in b.uses:
        invoke = use.operation
        if not isinstance(invoke, InvokeOp):
            continue
        ins_count = len(invoke.ins)
        if use.index < ins_count:
            continue
        r = use.index - ins_count
        pairs = symbols.derived(symbols.lookup(invoke, invoke.callee), _pairs)
        shareable = {p for q, p in pairs if q == r}
        if o not in shareable or o >= ins_count:
            return False
        if not any(u.operation is invoke and u.index == o for u, _ in a.uses):
            return False
        block = invoke.parent_block()
        for user_use, kind in a.uses:
            # Kills end the storage, which ``b`` keeps: they are not reads of ``a``.
            if kind is UseKind.KILL:
                continue
            user = user_use.operation
            if user is invoke:
                if user_use.index in shareable:
                    continue
                return False
            if kind is UseKind.ESCAPE:
                return False
            ancestor: Operation | None = user
            while ancestor is not None and ancestor.parent_block() is not block:
                ancestor = ancestor.parent_op()
            if ancestor is None or numbering.index[ancestor] >= numbering.index[invoke]:
                return False
        return True
    return False


def in_place_sources(
    tensors: Sequence[TensorLifetime], symbols: SymbolCache, numbering: OpNumbering
) -> dict[SSAValue, TensorLifetime]:
    """``b.value -> a`` for each ``b`` of ``tensors`` carved in place of an
    ``a`` of ``tensors`` (``declared_in_place``).

    Linear in the tensors' uses: ``a`` is the tensor whose use is the
    invoke's operand ``o``, looked up, not found by trying every pair (an
    in-place chain puts hundreds of tensors in one storage).
    """
    by_use: dict[tuple[Operation, int], TensorLifetime] = {}
    for a in tensors:
        for use, _ in a.uses:
            by_use.setdefault((use.operation, use.index), a)
    sources: dict[SSAValue, TensorLifetime] = {}
    for b in tensors:
        operand = b.alloc.attributes.get(INPLACE_OF_ATTR)
        if not isinstance(operand, IntegerAttr):
            continue
        # `declared_in_place` decides by b's first write, so look only there.
        for use, _ in b.uses:
            invoke = use.operation
            if isinstance(invoke, InvokeOp) and use.index >= len(invoke.ins):
                a = by_use.get((invoke, operand.value.data))
                if a is not None and a is not b and declared_in_place(a, b, symbols, numbering):
                    sources[b.value] = a
                break
    return sources
