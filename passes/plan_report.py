"""``plan-report``: what the plan in the IR uses, against the lower bound.

The data (``PlanReport``, built by ``gather_report``) is separate from the
formats: a format is one function ``PlanReport -> str`` in
``REPORT_WRITERS``, so adding one (svg, trace, c-header) is a function plus
a line there.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.ops import InvokeOp
from memplan.passes.analysis import (
    FunctionLifetimes,
    ModuleLifetimes,
    TensorLifetime,
    analyze_module,
)
from memplan.passes.analysis.inplace import in_place_sources
from memplan.passes.analysis.symbols import SymbolCache
from memplan.passes.pass_options import check_options
from memplan.passes.planning.bounds import buffers_lower_bound, peak_live_bytes
from memplan.passes.planning.model import Buffer, pool_base_alignment
from memplan.passes.report_formats.c_header import format_c_header
from memplan.passes.report_formats.common import pool_label
from memplan.passes.report_formats.records import (
    DYNAMIC,
    LARGEST_SHOWN,
    UNPLANNED,
    BufferRecord,
    FunctionReport,
    PlanReport,
    PoolRecord,
    TensorRecord,
)
from memplan.passes.report_formats.svg import format_svg
from memplan.passes.report_formats.trace import format_trace


def _pool_record(
    name: str,
    size: int | None,
    buffers: Sequence[Buffer],
    offsets: dict[str, int] | None,
    alignment: int,
) -> PoolRecord:
    if offsets is None:
        # Unplanned: one allocation each, so the sum of the sizes; compared
        # with the plain peak of live bytes (no alignment rounding either).
        used = sum(b.size for b in buffers)
        bound = peak_live_bytes(buffers) if buffers else 0
    else:
        used = max((offsets[b.id] + b.size for b in buffers), default=0)
        bound = buffers_lower_bound(buffers, alignment) if buffers else 0
    largest = sorted(buffers, key=lambda b: (-b.size, b.id))[:LARGEST_SHOWN]
    return PoolRecord(
        name=name,
        size=size,
        used=used,
        lower_bound=bound,
        buffer_count=len(buffers),
        largest=tuple((b.id, b.size) for b in largest),
        alignment=alignment,
        base_alignment=pool_base_alignment(alignment, (b.alignment for b in buffers)),
        no_planning=sum(b.size for b in buffers),
    )


def _function_report(lifetimes: ModuleLifetimes, function: FunctionLifetimes) -> FunctionReport:
    records: list[BufferRecord] = []
    by_pool: dict[str, list[Buffer]] = {pool.name: [] for pool in lifetimes.pools}
    unplanned: list[Buffer] = []
    offsets: dict[str, int] = {}
    for storage in function.storages:
        pinned = storage.pinned
        if storage.size is None:
            pool, offset = DYNAMIC, None
        elif pinned is None:
            pool, offset = UNPLANNED, None
            unplanned.append(storage.buffer())
        else:
            pool, offset = pinned
            by_pool.setdefault(pool, []).append(storage.buffer())
            offsets[storage.name] = offset
        records.append(
            BufferRecord(
                name=storage.name,
                size=storage.size,
                alignment=storage.alignment,
                start=storage.interval.start,
                end=storage.interval.end,
                pool=pool,
                offset=offset,
                device=storage.device,
                escapes=storage.escapes,
                read_only=storage.read_only,
                branch=storage.branch,
                size_is_bound=storage.is_dynamic and storage.size is not None,
            )
        )
    sizes = {pool.name: pool.size for pool in lifetimes.pools}
    alignments = {pool.name: pool.alignment for pool in lifetimes.pools}
    pools = [
        _pool_record(name, sizes.get(name), buffers, offsets, alignments.get(name, 1))
        for name, buffers in by_pool.items()
    ]
    if unplanned:
        pools.append(_pool_record(UNPLANNED, None, unplanned, None, 1))

    symbols = SymbolCache()
    sources = {
        value: a
        for storage in function.storages
        for value, a in in_place_sources(storage.tensors, symbols, function.numbering).items()
    }

    def inplace_of(tensor: TensorLifetime) -> str | None:
        source = sources.get(tensor.value)
        return source.name if source is not None else None

    tensors = tuple(
        TensorRecord(
            name=tensor.name,
            storage=tensor.storage.name if tensor.storage is not None else "",
            offset=tensor.offset,
            size=tensor.size,
            start=tensor.interval.start,
            end=tensor.interval.end,
            inplace_of=inplace_of(tensor),
        )
        for tensor in function.tensors
    )
    kernels = tuple(
        (function.numbering.index[op], op.callee.root_reference.data)
        for op in function.func.walk()
        if isinstance(op, InvokeOp)
    )
    return FunctionReport(
        function.name, function.end, tuple(pools), tuple(records), tensors, kernels
    )


def _module_pools(lifetimes: ModuleLifetimes) -> tuple[PoolRecord, ...]:
    by_pool: dict[str, list[Buffer]] = {pool.name: [] for pool in lifetimes.pools}
    offsets: dict[str, int] = {}
    for function, storage in lifetimes.storages():
        if storage.size is None or storage.pinned is None:
            continue
        buffer = lifetimes.module_buffer(function, storage)
        by_pool.setdefault(storage.pinned[0], []).append(buffer)
        offsets[buffer.id] = storage.pinned[1]
    return tuple(
        _pool_record(pool.name, pool.size, by_pool[pool.name], offsets, pool.alignment)
        for pool in lifetimes.pools
    )


def gather_report(module: ModuleOp) -> PlanReport:
    """The plan of ``module`` as data (every format writes this)."""
    lifetimes = analyze_module(module)
    return PlanReport(
        functions=tuple(_function_report(lifetimes, f) for f in lifetimes.functions),
        pools=_module_pools(lifetimes),
        module_name=module.sym_name.data if module.sym_name is not None else None,
    )


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------


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


def _pool_json(record: PoolRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "size": record.size,
        "used": record.used,
        "lower_bound": record.lower_bound,
        "no_planning": record.no_planning,
        "base_alignment": record.base_alignment,
        "buffer_count": record.buffer_count,
    }


def _tensor_json(record: TensorRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": record.name,
        "storage": record.storage,
        "offset": record.offset,
        "size": record.size,
        "start": record.start,
        "end": record.end,
    }
    if record.inplace_of is not None:  # only in-place tensors have the key
        entry["inplace_of"] = record.inplace_of
    return entry


def _report_json(report: PlanReport) -> dict[str, Any]:
    return {
        "functions": [
            {
                "name": function.name,
                "ops": function.ops,
                "pools": [_pool_json(p) for p in function.pools],
                "buffers": [_buffer_json(b) for b in function.buffers],
                "tensors": [_tensor_json(t) for t in function.tensors],
            }
            for function in report.functions
        ],
        "pools": [_pool_json(p) for p in report.pools],
    }


def _buffer_json(b: BufferRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": b.name,
        "size": b.size,
        "alignment": b.alignment,
        "start": b.start,
        "end": b.end,
        "pool": b.pool,
        "offset": b.offset,
        "device": b.device,
        "escapes": b.escapes,
        "read_only": b.read_only,
        "branch": [list(choice) for choice in b.branch],
    }
    if b.size_is_bound:  # only bounded dynamic storages have the key
        entry["size_is_bound"] = True
    return entry


def _is_record(value: Any) -> bool:
    """Scalars, lists of those, and dicts of those fit on one line."""
    if isinstance(value, dict):
        return all(not isinstance(v, dict) and _is_record(v) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(x, dict) and _is_record(x) for x in value)
    return True


def _dump(value: Any, indent: int = 0) -> str:
    """JSON with each record (a dict of scalars) on one line, for readable diffs."""
    if _is_record(value):
        return json.dumps(value)
    pad = "  " * (indent + 1)
    close = "  " * indent
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(key)}: {_dump(item, indent + 1)}" for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + close + "}"
    items = [pad + _dump(item, indent + 1) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + close + "]"


def format_json(report: PlanReport) -> str:
    """docs/design.md's report schema (plus ``ops``, ``tensors`` and module ``pools``)."""
    return _dump(_report_json(report)) + "\n"


REPORT_WRITERS: dict[str, Callable[[PlanReport], str]] = {
    "text": format_text,
    "json": format_json,
    "svg": format_svg,
    "trace": format_trace,
    "c-header": format_c_header,
}
"""Report formats by name: one function each."""


_deferred_reports: list[dict[str, str]] = []
"""Open ``deferred_report_files`` scopes, innermost last: path -> text."""


@contextmanager
def deferred_report_files() -> Iterator[dict[str, str]]:
    """Within the block, ``plan-report{output=F}`` records F's text instead of
    writing it: a driver writes them (``write_report_file``) only once the
    whole pipeline has succeeded, so a later pass that fails leaves F as it
    was. Outside such a block (a pass pipeline run from Python) F is written
    when the pass runs."""
    pending: dict[str, str] = {}
    _deferred_reports.append(pending)
    try:
        yield pending
    finally:
        _deferred_reports.pop()


def write_report_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file next to it and a
    rename: a failure leaves an existing ``path`` as it was. Raises
    ``OSError``."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, "w", encoding="utf-8") as stream:  # a FIFO, /dev/stdout
            stream.write(text)
        return
    handle, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)}.", dir=os.path.dirname(target)
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        if os.path.exists(target):
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


@dataclass(frozen=True)
class PlanReportPass(ModulePass):
    """Write a report of the memory plan; the IR is left unchanged.

    For each function, a row per pool: its size, the bytes the function's
    pinned storages use in it (highest offset + size), the lower bound
    (`passes.planning`: peak of live bytes of the same storages, rounded for
    alignment), their ratio, the number of storages and the largest ones.
    Static storages not yet pinned go to the pseudo-pool `(unplanned)`,
    whose `used` is the sum of their sizes (memory without planning) and
    whose bound is their plain peak of live bytes (no alignment rounding, as
    the sum has none), so the ratio shows what planning could gain. Dynamic-size storages are listed
    apart. With several functions, a module table follows (functions share
    the pools one after another in time).

    Lifetimes are op numbers from the one lifetime definition
    (`passes.analysis`), half-open `[start, end)`.

    Options:
    - `format` (`text` | `json` | `svg` | `trace` | `c-header`, default
      `text`): `json` follows docs/design.md's
      schema `{"functions": [{"name", "pools": [{"name", "size", "used",
      "lower_bound"}], "buffers": [{"name", "size", "alignment", "start",
      "end", "pool", "offset"}]}]}` with extra keys (`ops`, `tensors`,
      `buffer_count`, `device`, `escapes`, `read_only`, `branch`, and a
      module-level `pools`).
      `svg`: a memory map per function and pool (op number x byte offset,
      one rect per storage coloured by kind, used and lower-bound lines;
      `passes/report_formats/svg.py`). `trace`: Chrome trace-event JSON for
      ui.perfetto.dev / chrome://tracing (live and used bytes counters and
      one slice per storage, per function and pool; `.../trace.py`).
      `c-header`: C99 macros for pool sizes, alignments and offsets and a
      struct of pool base pointers (`.../c_header.py`). Unplanned storages
      are drawn stacked in `svg`/`trace` and listed in a comment by
      `c-header`.
    - `output` (path, default stderr): where to write; written only when
      the whole report was built, and by `memplan-opt` only when the whole
      pipeline succeeds (a later pass that fails leaves the file as it
      was); `memplan-opt` refuses the input file as `output`.
    - `prefix` (C identifier, `c-header` only; default the module's name,
      or `memplan`): the start of every macro name.
    """

    name = "plan-report"

    format: str = "text"
    output: str | None = None
    prefix: str | None = None

    def __post_init__(self) -> None:
        check_options(self)
        if self.format not in REPORT_WRITERS:
            raise ValueError(
                f"plan-report: unknown format '{self.format}'; expected one of "
                f"{', '.join(sorted(REPORT_WRITERS))}"
            )
        if self.prefix is not None and self.format != "c-header":
            raise ValueError(
                f"plan-report: option 'prefix' applies to format=c-header, not '{self.format}'"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        writer = REPORT_WRITERS[self.format]  # checked in __post_init__
        report = gather_report(op)
        text = format_c_header(report, self.prefix) if self.format == "c-header" else writer(report)
        if self.output is None:
            sys.stderr.write(text)
            return
        if _deferred_reports:
            _deferred_reports[-1][self.output] = text
            return
        try:
            write_report_file(self.output, text)
        except OSError as error:
            raise PassFailedException(
                f"plan-report: cannot write '{self.output}': {error.strerror}"
            ) from error
