"""``plan-report{format=text}``: a table per function (and one for the module).

Per pool: its size, the bytes without planning (one allocation per
storage), the bytes the plan uses, the lower bound, their ratio, the number
of storages and the largest ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplan.passes.report_formats.common import pool_label
from memplan.passes.report_formats.records import DYNAMIC, PlanReport, PoolRecord


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
