"""``plan-report{format=svg}``: a memory map per function and pool.

Each panel is one pool as one function uses it: time (op numbers of the
function, the lifetimes of ``passes.analysis``) runs left to right, byte
offsets bottom (0) to top. Every static storage is one ``<rect>`` spanning
its half-open lifetime ``[start, end)`` and its bytes ``[offset, offset +
size)``, filled by kind (activation, constant, output; see ``common``), with
a ``<title>`` tooltip giving its name, kind, size, lifetime and offset.
Horizontal lines mark the pool's ``used`` bytes (solid), the lower bound
(dashed: no plan can use less) and, when it is on the scale, the pool's
declared size (dotted). Offsets are labelled in B/KiB/MiB at power-of-two
steps, op numbers at 1-2-5 steps, and under them the kernel each
``memory.invoke`` calls, at its op number (thinned to ``KERNEL_LABEL_GAP``
pixels apart, each with its own tooltip).

Choices
- The ``(unplanned)`` pseudo-pool is drawn stacked (``common``): the map of
  memory without planning, topped by the sum of the sizes, under which the
  lower-bound line shows what planning could reach.
- The time axis spans the ops from the first start to the last end of
  the panel's storages (an imported model may begin with hundreds of ops
  that allocate nothing), ``PX_PER_OP`` pixels per op within
  ``[MIN_PLOT_WIDTH, MAX_PLOT_WIDTH]``; op numbers stay the function's own.
- The byte axis spans the larger of ``used`` and the lower bound, and the
  declared size when that is at most twice as much (a huge bound pool would
  squash the plan to a line).
- A rect smaller than ``MIN_EXTENT`` pixels is drawn that wide or tall,
  anchored at its start and offset, so every buffer stays visible. Panels
  carry their scale (``data-x0``, ``data-y0``, ``data-t0`` the first op,
  ``data-px-per-op``, ``data-px-per-byte``) and rects their storage
  (``data-name``), so tools and tests can map pixels back to the plan.
- Names are written inside a rect only when they fit in it and touch no
  other rect (rects of two ``scf.if`` branches may share bytes and time)
  and no label already written; the tooltip has every name. The ``<rect>``
  elements are exactly the buffers (legend swatches are circles).
- Dynamic-size storages are listed under their function, not drawn.
- No plotting library: the SVG is written directly (about 200 bytes per
  buffer: 0.4 MB for 2,000 buffers).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from xml.sax.saxutils import escape, quoteattr

from memplan.passes.report_formats.common import (
    KINDS,
    PoolView,
    format_bytes,
    format_bytes_exact,
    pool_views,
)
from memplan.passes.report_formats.records import FunctionReport, PlanReport

LEFT = 90
"""Pixels left of the plot: offset labels."""
RIGHT = 190
"""Pixels right of the plot: labels of the used / lower-bound / size lines."""
PLOT_HEIGHT = 420
PX_PER_OP = 8
MIN_PLOT_WIDTH = 480
MAX_PLOT_WIDTH = 2400
PANEL_HEADER = 46
PANEL_FOOTER = 44 + 120
"""Below the plot: op numbers, the axis title and the kernel names (rotated)."""
PANEL_GAP = 18
MIN_EXTENT = 3.0
"""Smallest width or height a buffer's rect is drawn with, in pixels: a
40-byte storage in a 64 KiB pool would otherwise be a fraction of a pixel."""
KERNEL_LABEL_GAP = 12.0
"""Least distance between two kernel names on the time axis, in pixels; a name
that would come closer to the previous one is left out (its op keeps its
tooltip in the buffers it touches)."""
KERNEL_LABEL_CHARS = 24
"""Kernel names on the time axis are cut to this many characters."""
LABEL_FONT = 10
CHAR_WIDTH = 0.6 * LABEL_FONT
"""Width of a label character, an upper estimate for sans-serif digits and letters."""
TEXT_CHAR_WIDTH = 6.2
"""The same for the 11 px text of headers and notes."""
LINE_LABEL_GAP = 13
MAX_BYTE_TICKS = 8
MAX_OP_TICKS = 12

Box = tuple[float, float, float, float]
"""x, y, width, height in pixels."""

GRID = 64.0
"""Cell size of the index that finds the rects a label box may touch."""

COLOURS = {"activation": "#4e79a7", "constant": "#59a14f", "output": "#f28e2b"}

STYLE = (
    "text{font-family:sans-serif;font-size:11px;fill:#222}"
    ".title{font-size:15px;font-weight:bold}"
    ".head{font-size:12px;font-weight:bold}"
    ".note{fill:#555}"
    "rect{stroke:#1b1b1b;stroke-width:0.25;stroke-opacity:0.6}"
    + "".join(f".{kind}{{fill:{colour}}}" for kind, colour in COLOURS.items())
    + ".label{font-size:10px;fill:#fff;pointer-events:none}"
    ".grid{stroke:#e4e4e4;stroke-width:1}"
    ".axis{stroke:#444;stroke-width:1;fill:none}"
    ".kernel{font-size:9px;fill:#555}"
    ".used{stroke:#222;stroke-width:1.3}"
    ".bound{stroke:#d62728;stroke-width:1.3;stroke-dasharray:6 4}"
    ".size{stroke:#777;stroke-width:1.3;stroke-dasharray:2 3}"
    ".tick{fill:#444;font-size:10px}"
)


def _num(value: float) -> str:
    """A coordinate with at most two decimals (keeps the file small)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def byte_step(top: int) -> int:
    """A power-of-two tick step giving at most ``MAX_BYTE_TICKS`` steps up to ``top``."""
    step = 1
    while step * MAX_BYTE_TICKS < top:
        step *= 2
    return step


def op_step(ops: int) -> int:
    """A 1-2-5 tick step giving at most ``MAX_OP_TICKS`` steps up to ``ops``."""
    scale = 1
    while True:
        for factor in (1, 2, 5):
            if factor * scale * MAX_OP_TICKS >= ops:
                return factor * scale
        scale *= 10


def time_span(view: PoolView) -> tuple[int, int]:
    """The ops on a panel's time axis: from the first start to the last end."""
    return min(b.start for b in view.buffers), max(b.end for b in view.buffers)


def plot_width(ops: int) -> int:
    """Pixels of a time axis of ``ops`` ops: ``PX_PER_OP`` per op, within bounds."""
    return max(MIN_PLOT_WIDTH, min(MAX_PLOT_WIDTH, ops * PX_PER_OP))


def byte_axis_top(view: PoolView) -> tuple[int, bool]:
    """The highest offset on the axis (a whole tick) and whether the size line fits."""
    top = max(
        view.pool.used, view.pool.lower_bound, max(b.offset + b.size for b in view.buffers), 1
    )
    size = view.pool.size
    show_size = view.planned and size is not None and size <= 2 * top
    if show_size and size is not None:
        top = max(top, size)
    step = byte_step(top)
    return math.ceil(top / step) * step, show_size


class _Canvas:
    """Accumulates SVG elements; ``y`` is the top of the next panel."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y = 0.0
        self.width = 0.0

    def add(self, element: str) -> None:
        self.parts.append(element)

    def line(self, css: str, x1: float, y1: float, x2: float, y2: float) -> None:
        self.add(
            f'<line class="{css}" x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}"/>'
        )

    def text(
        self, x: float, y: float, content: str, css: str | None = None, anchor: str | None = None
    ) -> None:
        attrs = f' class="{css}"' if css else ""
        if anchor:
            attrs += f' text-anchor="{anchor}"'
        self.add(f'<text x="{_num(x)}" y="{_num(y)}"{attrs}>{escape(content)}</text>')


def _legend(canvas: _Canvas, title: str) -> None:
    canvas.text(LEFT, 22, title, "title")
    x = LEFT
    y = 44
    for kind in KINDS:
        canvas.add(f'<circle class="{kind}" cx="{x + 5}" cy="{y - 4}" r="5"/>')
        canvas.text(x + 14, y, kind)
        x += 14 + len(kind) * 7 + 18
    for css, text in (("used", "used"), ("bound", "lower bound"), ("size", "pool size")):
        canvas.add(f'<line class="{css}" x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}"/>')
        canvas.text(x + 30, y, text)
        x += 30 + len(text) * 7 + 18
    canvas.text(
        LEFT,
        y + 18,
        "x: op number in the function (lifetimes are [start, end)); "
        "y: byte offset in the pool; hover a buffer for its details",
        "note",
    )
    canvas.width = max(canvas.width, x)
    canvas.y = y + 34


def _describe(view: PoolView) -> str:
    pool = view.pool
    parts = [f"used {format_bytes(pool.used)}", f"lower bound {format_bytes(pool.lower_bound)}"]
    if pool.ratio is not None:
        parts.append(f"{pool.ratio:.2f}x")
    if pool.size is not None:
        parts.append(f"size {format_bytes(pool.size)}")
    parts.append(f"{len(view.buffers)} storage{'' if len(view.buffers) == 1 else 's'}")
    if not view.planned:
        parts.append("not planned: storages drawn stacked, each in its own bytes")
    return ", ".join(parts)


def _tooltip(view: PoolView, index: int) -> str:
    placed = view.buffers[index]
    record = placed.record
    where = (
        f"offset {format_bytes_exact(placed.offset)}"
        if view.planned
        else f"not planned (drawn at {format_bytes_exact(placed.offset)})"
    )
    return (
        f"{placed.name} ({placed.kind}): {format_bytes_exact(placed.size)}, "
        f"live [{placed.start}, {placed.end}), {where}, align {record.alignment}"
    )


def _panel(canvas: _Canvas, view: PoolView) -> None:
    function = view.function
    first, last = time_span(view)
    width = plot_width(last - first)
    top_bytes, show_size = byte_axis_top(view)
    plot_top = canvas.y + PANEL_HEADER
    x0 = float(LEFT)
    y0 = plot_top + PLOT_HEIGHT
    px_per_op = width / (last - first)
    px_per_byte = PLOT_HEIGHT / top_bytes

    description = _describe(view)
    canvas.text(LEFT, canvas.y + 16, f"@{function.name} \u2014 {view.pool_label}", "head")
    canvas.text(LEFT, canvas.y + 32, description, "note")
    canvas.width = max(canvas.width, LEFT + len(description) * TEXT_CHAR_WIDTH + 20)
    canvas.add(
        f'<g class="panel" data-function={quoteattr(function.name)} '
        f'data-pool={quoteattr(view.pool.name)} data-x0="{_num(x0)}" data-y0="{_num(y0)}" '
        f'data-t0="{first}" data-px-per-op="{px_per_op!r}" data-px-per-byte="{px_per_byte!r}">'
    )

    # Grid and ticks.
    step = byte_step(top_bytes)
    for value in range(0, top_bytes + 1, step):
        y = y0 - value * px_per_byte
        canvas.line("grid", x0, y, x0 + width, y)
        canvas.text(x0 - 6, y + 3.5, format_bytes(value), "tick", "end")
    ticks = op_step(last - first)
    for value in range(-(-first // ticks) * ticks, last + 1, ticks):
        x = x0 + (value - first) * px_per_op
        canvas.line("axis", x, y0, x, y0 + 4)
        canvas.text(x, y0 + 16, str(value), "tick", "middle")
    canvas.text(x0 + width / 2, y0 + 34, f"op number in @{function.name}", "note", "middle")
    _kernel_labels(canvas, function, first, last, x0, y0 + 44, px_per_op)

    # Buffers, then the labels that fit.
    boxes: list[Box] = []
    for index, placed in enumerate(view.buffers):
        x = x0 + (placed.start - first) * px_per_op
        w = max((placed.end - placed.start) * px_per_op, MIN_EXTENT)
        bottom = y0 - placed.offset * px_per_byte
        h = max(placed.size * px_per_byte, MIN_EXTENT)
        y = bottom - h
        boxes.append((x, y, w, h))
        canvas.add(
            f'<rect class="{placed.kind}" x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" '
            f'height="{_num(h)}" data-name={quoteattr(placed.name)}>'
            f"<title>{escape(_tooltip(view, index))}</title></rect>"
        )
    label_parts: list[str] = []
    for index in _labels(view, boxes):
        x, y, w, h = boxes[index]
        label_parts.append(
            f'<text class="label" x="{_num(x + w / 2)}" y="{_num(y + h / 2 + 3.5)}" '
            f'text-anchor="middle">{escape(view.buffers[index].name)}</text>'
        )
    canvas.parts.extend(label_parts)

    # Used, lower bound and size lines, their labels pushed apart.
    lines = [("used", view.pool.used, "used"), ("bound", view.pool.lower_bound, "lower bound")]
    if show_size and view.pool.size is not None:
        lines.append(("size", view.pool.size, "pool size"))
    placed_labels: list[tuple[float, str, str]] = []
    for css, value, text in lines:
        y = y0 - value * px_per_byte
        canvas.line(css, x0, y, x0 + width + 8, y)
        placed_labels.append((y, css, f"{text} {format_bytes(value)}"))
    placed_labels.sort(key=lambda item: item[0])
    previous = -math.inf
    for y, _, text in placed_labels:
        y = max(y + 4, previous + LINE_LABEL_GAP)
        previous = y
        canvas.text(x0 + width + 12, y, text)
    canvas.add(
        f'<path class="axis" d="M{_num(x0)} {_num(plot_top)}V{_num(y0)}H{_num(x0 + width)}"/>'
    )
    canvas.add("</g>")
    canvas.width = max(canvas.width, x0 + width + RIGHT)
    canvas.y = y0 + PANEL_FOOTER + PANEL_GAP


def _kernel_labels(
    canvas: _Canvas,
    function: FunctionReport,
    first: int,
    last: int,
    x0: float,
    y: float,
    px_per_op: float,
) -> None:
    """The kernel each ``memory.invoke`` calls, written down the time axis at its
    op number, thinned so that names stay ``KERNEL_LABEL_GAP`` pixels apart."""
    previous = -math.inf
    for number, name in function.kernels:
        if not first <= number <= last:
            continue
        x = x0 + (number - first + 0.5) * px_per_op
        if x - previous < KERNEL_LABEL_GAP:
            continue
        previous = x
        shown = (
            name if len(name) <= KERNEL_LABEL_CHARS else name[: KERNEL_LABEL_CHARS - 1] + "\u2026"
        )
        canvas.add(
            f'<text class="kernel" x="{_num(x)}" y="{_num(y)}" text-anchor="end" '
            f'transform="rotate(-60 {_num(x)} {_num(y)})" data-op="{number}">'
            f"{escape(shown)}<title>{escape(f'op {number}: {name}')}</title></text>"
        )


def _boxes_overlap(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _cells(box: Box) -> Iterator[tuple[int, int]]:
    for column in range(int(box[0] // GRID), int((box[0] + box[2]) // GRID) + 1):
        for row in range(int(box[1] // GRID), int((box[1] + box[3]) // GRID) + 1):
            yield column, row


def _labels(view: PoolView, boxes: list[Box]) -> list[int]:
    """The indices of the rects to name (the name is centred in the rect).

    A name is written when it fits in its rect (``CHAR_WIDTH`` per character
    plus 6 px, 13 px high) and its box touches no other rect (two ``scf.if``
    branches may share bytes and time) and no label written before.
    """
    grid: dict[tuple[int, int], list[int]] = {}
    for index, box in enumerate(boxes):
        for cell in _cells(box):
            grid.setdefault(cell, []).append(index)
    written: list[int] = []
    taken: dict[tuple[int, int], list[Box]] = {}
    for index, (x, y, w, h) in enumerate(boxes):
        text_width = len(view.buffers[index].name) * CHAR_WIDTH
        if w < text_width + 6 or h < LABEL_FONT + 3:
            continue
        label = (
            x + w / 2 - text_width / 2,
            y + h / 2 - LABEL_FONT / 2,
            text_width,
            float(LABEL_FONT),
        )
        cells = list(_cells(label))
        if any(
            other != index and _boxes_overlap(label, boxes[other])
            for cell in cells
            for other in grid.get(cell, ())
        ):
            continue
        if any(_boxes_overlap(label, other) for cell in cells for other in taken.get(cell, ())):
            continue
        written.append(index)
        for cell in cells:
            taken.setdefault(cell, []).append(label)
    return written


def _function_notes(canvas: _Canvas, function: FunctionReport, drawn: bool) -> None:
    dynamic = [b.name for b in function.buffers if b.size is None]
    notes: list[str] = []
    if not drawn:
        notes.append(f"@{function.name}: no static storages to draw")
    if dynamic:
        shown = ", ".join(dynamic[:8]) + (", ..." if len(dynamic) > 8 else "")
        notes.append(
            f"@{function.name}: {len(dynamic)} dynamic-size storage"
            f"{'' if len(dynamic) == 1 else 's'} (sized at run time, not drawn): {shown}"
        )
    for note in notes:
        canvas.text(LEFT, canvas.y + 14, note, "note")
        canvas.y += 22


def format_svg(report: PlanReport) -> str:
    """The memory map of every function and pool of ``report`` as one SVG document."""
    canvas = _Canvas()
    module = f" @{report.module_name}" if report.module_name else ""
    _legend(canvas, f"memplan memory map{module}")
    for function in report.functions:
        views = pool_views(function)
        for view in views:
            _panel(canvas, view)
        _function_notes(canvas, function, bool(views))
    width = math.ceil(max(canvas.width, LEFT + MIN_PLOT_WIDTH + RIGHT))
    height = math.ceil(canvas.y + 10)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<title>{escape('memplan memory map' + module)}</title>",
        f"<style>{STYLE}</style>",
        f'<path fill="#fff" d="M0 0H{width}V{height}H0Z"/>',
        *canvas.parts,
        "</svg>",
    ]
    return "\n".join(lines) + "\n"
