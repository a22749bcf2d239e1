"""What the report formats share: buffer kinds, the layout shown per pool, byte units.

Kinds
    ``output`` when the storage escapes its function (returned, passed to a
    call, stored), ``constant`` when it is never written (``read_only``: a
    buffer the application fills, e.g. weights; constants imported as
    ``memref.global`` are not storages and never appear), ``activation``
    otherwise (the workspace).

Layout of a pool
    A planned pool shows every storage at its pinned offset. The
    ``(unplanned)`` pseudo-pool has no offsets: its storages are drawn
    stacked one on another in order of their start (ties: program order),
    so each has its own bytes, as without planning; the top of the stack is
    the pseudo-pool's ``used`` (the sum of the sizes). Dynamic-size storages
    have no size to draw and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memplan.passes.report_formats.records import (
    BufferRecord,
    FunctionReport,
    PoolRecord,
)

BufferKind = Literal["activation", "constant", "output"]

KINDS: tuple[BufferKind, ...] = ("activation", "constant", "output")

EXPRESSION_LIMIT = 200
"""Longest size expression (characters) the text report and the C header's
comments print; a longer one is left to the C header's functions."""

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def buffer_kind(buffer: BufferRecord) -> BufferKind:
    """``output`` if the storage escapes, ``constant`` if never written, else ``activation``."""
    if buffer.escapes:
        return "output"
    if buffer.read_only:
        return "constant"
    return "activation"


@dataclass(frozen=True)
class PlacedBuffer:
    """A static storage with the offset it is shown at and its kind."""

    record: BufferRecord
    offset: int
    size: int
    kind: BufferKind

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def start(self) -> int:
        return self.record.start

    @property
    def end(self) -> int:
        return self.record.end


@dataclass(frozen=True)
class PoolView:
    """One pool as one function uses it: what the SVG panel and trace process show.

    ``planned`` is False for the ``(unplanned)`` pseudo-pool, whose offsets
    are the stacked layout described in the module docstring.
    """

    function: FunctionReport
    pool: PoolRecord
    buffers: tuple[PlacedBuffer, ...]
    planned: bool

    @property
    def pool_label(self) -> str:
        """``@name`` for a pool, the pseudo-pool's own name (``(unplanned)``) otherwise."""
        return pool_label(self.pool.name)


def pool_label(name: str) -> str:
    """``@sram`` for a pool; pseudo-pools keep their parenthesised name."""
    return name if name.startswith("(") else f"@{name}"


def pool_views(function: FunctionReport) -> list[PoolView]:
    """The pools ``function`` places static storages in, in report order."""
    by_pool: dict[str, list[BufferRecord]] = {}
    for buffer in function.buffers:
        if buffer.size is not None:
            by_pool.setdefault(buffer.pool, []).append(buffer)
    views: list[PoolView] = []
    for pool in function.pools:
        members = by_pool.get(pool.name, [])
        if not members:
            continue
        planned = all(b.offset is not None for b in members)
        views.append(PoolView(function, pool, _placed(members, planned), planned))
    return views


def _placed(members: Sequence[BufferRecord], planned: bool) -> tuple[PlacedBuffer, ...]:
    if planned:
        return tuple(
            PlacedBuffer(b, b.offset, b.size, buffer_kind(b))  # type: ignore[arg-type]
            for b in members
        )
    order = sorted(range(len(members)), key=lambda i: (members[i].start, i))
    offsets: dict[int, int] = {}
    top = 0
    for index in order:
        offsets[index] = top
        top += members[index].size or 0
    return tuple(
        PlacedBuffer(b, offsets[i], b.size or 0, buffer_kind(b)) for i, b in enumerate(members)
    )


def format_bytes(count: int) -> str:
    """``count`` bytes in binary units: ``40 B``, ``32 KiB``, ``1.5 MiB``."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if count >= scale:
            text = f"{count / scale:.2f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
    return f"{count} B"


def format_bytes_exact(count: int) -> str:
    """``32 KiB (32768 B)``, or just ``40 B`` below a KiB."""
    short = format_bytes(count)
    return short if count < KIB else f"{short} ({count} B)"
