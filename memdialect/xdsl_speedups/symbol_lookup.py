"""Symbol lookups answered from an index while a module verifies.

xDSL 0.74's ``SymbolTable.lookup_symbol`` scans its table's ops for every
lookup, and ``func.call``'s verifier looks its callee up, so verifying a
module of n calls beside m symbols takes n x m steps: DenseNet-121 imported
(668 calls, 391 functions and 848 globals) spent more than half of a
``memplan-opt`` run there. Nothing changes a module while it verifies, so
within ``ModuleOp.verify`` each table's symbols are indexed on its first
lookup (the first op of each name, as the scan finds it) and every lookup
is a dictionary access; outside it, lookups are xDSL's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

from memplan.dialect.regions import symbol_table_of

_xdsl_lookup: Callable[[Operation, str | StringAttr | SymbolRefAttr], Operation | None] = (
    SymbolTable.lookup_symbol
)
_xdsl_module_verify = ModuleOp.verify

_indexes: dict[Operation, dict[StringAttr, Operation]] | None = None
"""Each symbol table's symbols by name, while a module verifies."""


def _symbols(table: Operation) -> dict[StringAttr, Operation]:
    assert _indexes is not None
    index = _indexes.get(table)
    if index is None:
        index = _indexes[table] = {}
        for op in table.regions[0].block.ops:
            interface = op.get_trait(SymbolOpInterface)
            if interface is not None and (name := interface.get_sym_attr_name(op)) is not None:
                index.setdefault(name, op)
    return index


def _indexed_lookup(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    """``SymbolTable.lookup_symbol``, from the index of ``op``'s table."""
    if _indexes is None:
        return _xdsl_lookup(op, name)
    # xDSL's lookup starts at ``op`` itself, then its ancestors.
    table = op if op.has_trait(SymbolTable) else symbol_table_of(op)
    if table is None:
        return _xdsl_lookup(op, name)  # xDSL's own error
    if isinstance(name, str | StringAttr):
        name = SymbolRefAttr(name)
    found = _symbols(table).get(name.root_reference)
    if found is None or not name.nested_references:
        return found
    nested_root, *nested_references = name.nested_references.data
    return _indexed_lookup(found, SymbolRefAttr(nested_root, nested_references))


@contextmanager
def _indexed() -> Iterator[None]:
    global _indexes
    if _indexes is not None:  # a module inside a verifying module
        yield
        return
    _indexes = {}
    try:
        yield
    finally:
        _indexes = None


def _verify_indexed(self: ModuleOp, verify_nested_ops: bool = True) -> None:
    with _indexed():
        _xdsl_module_verify(self, verify_nested_ops)


def index_symbol_lookups_while_verifying() -> None:
    """Install the index (``memplan.dialect.xdsl_speedups.ENABLED`` decides)."""
    SymbolTable.lookup_symbol = staticmethod(_indexed_lookup)  # type: ignore[method-assign]
    ModuleOp.verify = _verify_indexed  # type: ignore[method-assign]
