"""Compare a function's allocations before and after memplan.

Usage: arena_report.py BUFFERIZED.mlir PLANNED.mlir

BUFFERIZED is what `mlir-opt --one-shot-bufferize ...` printed; PLANNED is
`memplan-opt --import-memref ... --lower-to-memref` of it. For every function
with allocations, prints one line

    @f: N allocations (B B) -> A arena of S B + K kept (KB B); I imported (IB B), D B saved

where an arena is a static `memref<Sxi8>` allocation whose every use is a
`memref.view` or its dealloc, "kept" are the allocations memplan left alone,
and "imported" the ones it planned (before minus kept); D = IB - S. Only static
allocations are counted; functions with none are not listed. Exits with
status 1 when a function has more than one arena, or when its arena is
larger than the allocations it replaced.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import get_all_dialects, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser


def parse(path: str) -> ModuleOp:
    context = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    return Parser(context, Path(path).read_text(), path).parse_module()


def static_bytes(alloc: memref.AllocOp) -> int:
    memref_type = alloc.memref.type
    assert isinstance(memref_type, MemRefType), memref_type
    element = memref_type.get_element_type()
    count = 1
    for dim in memref_type.get_shape():
        count *= dim
    return count * ((element.bitwidth + 7) // 8)  # type: ignore[attr-defined]


def is_arena(alloc: memref.AllocOp) -> bool:
    memref_type = alloc.memref.type
    assert isinstance(memref_type, MemRefType)
    return (
        not alloc.dynamic_sizes
        and memref_type.get_element_type().bitwidth == 8  # type: ignore[attr-defined]
        and len(memref_type.get_shape()) == 1
        and all(
            isinstance(use.operation, memref.ViewOp | memref.DeallocOp) for use in alloc.memref.uses
        )
        and any(isinstance(use.operation, memref.ViewOp) for use in alloc.memref.uses)
    )


def allocations(module: ModuleOp) -> dict[str, list[memref.AllocOp]]:
    found: dict[str, list[memref.AllocOp]] = {}
    for function in module.ops:
        if isinstance(function, FuncOp):
            allocs = [
                op
                for op in function.walk()
                if isinstance(op, memref.AllocOp) and not op.dynamic_sizes
            ]
            if allocs:
                found[function.sym_name.data] = allocs
    return found


def main() -> int:
    before = allocations(parse(sys.argv[1]))
    after = allocations(parse(sys.argv[2]))
    status = 0
    for name, allocs in before.items():
        original = sum(static_bytes(a) for a in allocs)
        planned = after.get(name, [])
        arenas = [static_bytes(a) for a in planned if is_arena(a)]
        kept = [static_bytes(a) for a in planned if not is_arena(a)]
        imported_count = len(allocs) - len(kept)
        imported = original - sum(kept)
        print(
            f"@{name}: {len(allocs)} allocations ({original} B) -> "
            f"{len(arenas)} arena of {sum(arenas)} B + {len(kept)} kept ({sum(kept)} B); "
            f"{imported_count} imported ({imported} B), {imported - sum(arenas)} B saved"
        )
        if len(arenas) > 1 or sum(arenas) > imported:
            print(f"@{name}: FAIL: expected one arena no larger than {imported} B")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
