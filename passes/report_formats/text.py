"""``plan-report{format=text}``: a table per function (and one for the module).

Per pool: its size, the bytes without planning (one allocation per
storage), the bytes the plan uses, the lower bound, their ratio, the number
of storages and the largest ones.

A function with dynamic dims (``memory.dim_ranges``) gets a ``dims:`` line,
and each of its pools with an offset program (``usmp{parametric=true}``) a
block under the table: the pool's bytes as an expression of the dims, its
bytes at the lower and at the upper ends of the ranges, and per storage by
slot the slots it sits above, its size expression and its offset
expression. A pool expression longer than ``EXPRESSION_LIMIT`` characters
is not printed: the pool's line gives the number of storages in the
program instead, and ``format=c-header`` writes the program as C
functions; a storage's expressions are printed up to ``OFFSET_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplan.passes.report_formats.common import EXPRESSION_LIMIT, pool_label
from memplan.passes.report_formats.records import (
    DYNAMIC,
    FunctionReport,
    ParametricPoolRecord,
    PlanReport,
    PoolRecord,
)

OFFSET_LIMIT = 80
"""Longest offset or size expression (characters) a storage's line prints."""


def _ratio_text(record: PoolRecord) -> str:
    ratio = record.ratio
    return "-" if ratio is None else f"{ratio:.2f}x"


def _table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns: the first column left-aligned, numbers right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            last = i == len(row) - 1
            if i == 0 or last:
                cells.append(cell if last else cell.ljust(widths[i]))
            else:
                cells.append(cell.rjust(widths[i]))
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


TEXT_LEGEND = (
    "legend: size - = unbounded (grows to what the plan uses); "
    "no planning = one allocation per storage; lower bound = peak of live bytes"
)


def _pool_rows(pools: Sequence[PoolRecord]) -> list[str]:
    if not pools:
        return ["  no storages in any pool"]
    rows = [["pool", "size", "no planning", "used", "lower bound", "used/lb", "buffers", "largest"]]
    for record in pools:
        rows.append(
            [
                pool_label(record.name),
                "-" if record.size is None else str(record.size),
                str(record.no_planning),
                str(record.used),
                str(record.lower_bound),
                _ratio_text(record),
                str(record.buffer_count),
                ", ".join(f"{label} ({size})" for label, size in record.largest),
            ]
        )
    return _table(rows)


def _dims_line(function: FunctionReport) -> str:
    def place(argument: int | None, axis: int | None) -> str:
        if argument is None or axis is None:
            return ""
        return f" (argument {argument}, axis {axis})"

    return "  dims: " + ", ".join(
        f"{d.name} in [{d.lower}, {d.upper}]{place(d.argument, d.axis)}" for d in function.dims
    )


def _parametric_lines(function: FunctionReport, pool: ParametricPoolRecord) -> list[str]:
    count = len(pool.storages)
    storages = f"{count} storage{'' if count == 1 else 's'}"
    size = str(pool.size_expr)
    if len(size) > EXPRESSION_LIMIT:
        head = (
            f"  parametric pool @{pool.name}: an offset program of {storages} "
            f"(its size expression has {len(size)} characters; "
            "format=c-header writes it as C functions of the dims)"
        )
    else:
        head = f"  parametric pool @{pool.name}: {size} bytes ({storages})"
    ends = {d.name: d for d in function.dims}

    def at(end: str) -> str:
        values = ", ".join(f"{name}={getattr(ends[name], end)}" for name in pool.dims)
        return f"at the {end} ends{f' ({values})' if values else ''}"

    lines = [
        head,
        f"    {at('lower')}: {pool.at_lower} bytes; {at('upper')}: {pool.at_upper} bytes",
    ]
    buffers = {b.name: b for b in function.buffers}
    rows = [["slot", "storage", "above", "size", "offset"]]
    for slot, (name, size_expr) in enumerate(zip(pool.storages, pool.sizes)):
        offset, size = str(buffers[name].offset_expr), str(size_expr)
        rows.append(
            [
                str(slot),
                name,
                ", ".join(map(str, pool.above[slot])) or "-",
                size if len(size) <= OFFSET_LIMIT else "(long)",
                offset if len(offset) <= OFFSET_LIMIT else "(long: see format=c-header)",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += [
        "    " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
        for row in rows
    ]
    return lines


def format_text(report: PlanReport) -> str:
    """A table per function (and one for the module): used vs. lower bound per pool."""
    lines: list[str] = []
    for function in report.functions:
        count = len(function.buffers)
        lines.append(
            f"function @{function.name}: {count} storage{'' if count == 1 else 's'}, "
            f"{function.ops} ops"
        )
        # Pools this function does not use are left out of its table.
        lines.extend(_pool_rows([p for p in function.pools if p.buffer_count]))
        if function.dims:
            lines.append(_dims_line(function))
        for pool in function.parametric:
            lines.extend(_parametric_lines(function, pool))
        # One storage per line: a model has hundreds of them.
        bounded = [f"{b.name} (max {b.size})" for b in function.buffers if b.size_is_bound]
        if bounded:
            lines.append("  dynamic-size storages planned at their bound:")
            lines.extend(f"    {entry}" for entry in bounded)
        dynamic = [b.name for b in function.buffers if b.pool == DYNAMIC]
        if dynamic:
            lines.append(
                "  dynamic-size storages without a max (not planned, allocated at run time):"
            )
            lines.extend(f"    {name}" for name in dynamic)
    if len(report.functions) > 1 and report.pools:
        lines.append("module")
        lines.extend(_pool_rows(report.pools))
    lines.append(TEXT_LEGEND)
    return "\n".join(lines) + "\n"
