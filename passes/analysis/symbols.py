"""Symbol lookup with one name map per symbol table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import SymbolTable

from memplan.dialect.regions import symbol_table_of

_T = TypeVar("_T")


class SymbolCache:
    """``SymbolTable.lookup_symbol`` with one name map per symbol table.

    xDSL's lookup scans the table's ops on every call, which makes a walk
    over an imported model's calls quadratic (thousands of calls, hundreds
    of kernel declarations). One cache serves one analysis or rewrite during
    which the symbols it looks up are neither added, renamed nor erased, nor
    their attributes changed (``derived`` keeps what was read from them).
    """

    def __init__(self) -> None:
        self._tables: dict[Operation, dict[str, Operation]] = {}
        # The table above an op is the one above its block: one walk up per block.
        self._table_above: dict[Block, Operation | None] = {}
        self._derived: dict[tuple[Operation | None, Callable[..., object]], object] = {}

    def lookup(self, op: Operation, ref: SymbolRefAttr) -> Operation | None:
        """The op ``ref`` names, seen from ``op`` (``None`` if nothing does)."""
        block = op.parent_block()
        if block is None:
            table = symbol_table_of(op)
        elif block in self._table_above:
            table = self._table_above[block]
        else:
            table = self._table_above[block] = symbol_table_of(op)
        if table is None or ref.nested_references.data:
            return SymbolTable.lookup_symbol(op, ref)
        symbols = self._tables.get(table)
        if symbols is None:
            symbols = {}
            for region in table.regions:
                for block in region.blocks:
                    for child in block.ops:
                        name = child.get_attr_or_prop("sym_name")
                        if isinstance(name, StringAttr):
                            symbols.setdefault(name.data, child)
            self._tables[table] = symbols
        return symbols.get(ref.root_reference.data)

    def derived(self, symbol: Operation | None, derive: Callable[[Operation | None], _T]) -> _T:
        """``derive(symbol)``, computed once per symbol (a kernel declaration's
        attributes read into a set, say) during the cache's life."""
        key = (symbol, derive)
        if key not in self._derived:
            self._derived[key] = derive(symbol)
        return cast(_T, self._derived[key])

    def declaration(self, call: func.CallOp) -> func.FuncOp | None:
        """The declaration (a ``func.func`` without body) ``call`` calls, if it is one."""
        callee = self.lookup(call, call.callee)
        return callee if isinstance(callee, func.FuncOp) and callee.is_declaration else None
