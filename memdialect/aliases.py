"""Which SSA values alias a storage or a tensor.

One definition, shared by the verifiers and by ``passes/analysis``: a storage
is aliased by the tensors carved from it (``memory.alloc_tensor``), and a
tensor by the results of ``memref`` view-like ops applied to it, transitively.
Block arguments that a value flows into (``cf.br`` operands, ``scf.for``
iteration arguments, ``scf.if`` / ``scf.for`` results through ``scf.yield``)
are followed by the lifetime analysis, not here: they depend on control flow.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Operation, SSAValue

VIEW_LIKE_OPS: frozenset[str] = frozenset(
    {
        "memref.view",
        "memref.subview",
        "memref.reinterpret_cast",
        "memref.cast",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.reshape",
        "memref.memory_space_cast",
        "memref.transpose",
    }
)
"""``memref`` ops whose result views the memory of their first operand."""


def is_view_of_operand(op: Operation, operand_index: int) -> bool:
    """True when ``op``'s results alias its operand number ``operand_index``."""
    if op.name in VIEW_LIKE_OPS:
        return operand_index == 0
    return op.name == "memory.alloc_tensor" and operand_index == 0


def direct_aliases(value: SSAValue) -> Iterator[SSAValue]:
    """Results of ops that view ``value`` directly (one step)."""
    for use in value.uses:
        if is_view_of_operand(use.operation, use.index):
            yield from use.operation.results


def transitive_aliases(value: SSAValue) -> list[SSAValue]:
    """``value`` and every value viewing it, in discovery order."""
    found = [value]
    seen = {value}
    index = 0
    while index < len(found):
        for alias in direct_aliases(found[index]):
            if alias not in seen:
                seen.add(alias)
                found.append(alias)
        index += 1
    return found


def underlying_root(value: SSAValue) -> SSAValue:
    """Walk view-like ops and ``alloc_tensor`` back to the value they view."""
    while isinstance(value.owner, Operation) and value.owner.operands:
        owner = value.owner
        if not is_view_of_operand(owner, 0):
            break
        value = owner.operands[0]
    return value
