"""``plan-report{format=trace}``: the plan as Chrome trace-event JSON.

Open the file in https://ui.perfetto.dev (Open trace file) or
``chrome://tracing`` (Load). The JSON object format is used,
``{"traceEvents": [...], "otherData": {...}}``, in that order: Perfetto's
importer stops at the first top-level key it does not know, so
``traceEvents`` comes first, and there is no ``displayTimeUnit`` (Perfetto
reads ``"ns"`` there as "``ts`` is in nanoseconds"). ``otherData`` records
the generator, the time unit and, per process, its function, pool, used
bytes and lower bound.

Layout
- One process per function and pool (``process_name`` ``@main @sram``),
  in report order; one op number of the function is one microsecond of
  trace time (``ts``), so a storage live over ops ``[4, 11)`` is a slice
  from 4 us to 11 us.
- Two counter tracks per process (``ph: "C"``, one value ``bytes``):
  ``live`` is the bytes of the storages live at that time (storages in two
  regions of one ``scf.if`` count as the larger region, as for the lower
  bound, so its peak is the lower bound before alignment rounding);
  ``used`` is the top of the highest live storage (offset + size), whose
  peak is the pool's ``used`` bytes in the report.
- One complete event (``ph: "X"``) per static storage, named after it,
  with ``args`` size, offset, alignment, kind and lifetime. Slices on one
  trace thread must nest, and live storages overlap in time without
  nesting, so each process spreads its slices over the fewest threads
  (``buffers 1``, ``buffers 2``, ...) such that no two slices of a thread
  overlap: interval partitioning by start, each slice to the lowest free
  thread.
- The ``(unplanned)`` pseudo-pool uses the stacked offsets of ``common``.
  Dynamic-size storages have no size and are left out.

Every event has ``ph``, ``ts``, ``pid``, ``tid`` and ``name`` (metadata
events included, with ``ts`` 0), so strict readers accept it.
"""

from __future__ import annotations

import heapq
import json
from typing import Any

from memplan.passes.planning.bounds import BranchTree
from memplan.passes.report_formats.common import PlacedBuffer, PoolView, pool_views
from memplan.passes.report_formats.records import PlanReport

LIVE_COUNTER = "live"
USED_COUNTER = "used"


def counter_samples(buffers: tuple[PlacedBuffer, ...]) -> list[tuple[int, int, int]]:
    """``(time, live bytes, used bytes)`` at every time a storage starts or ends.

    Half-open lifetimes: a storage ending at ``t`` is gone at ``t``, one
    starting at ``t`` is there, so the sample at ``t`` applies both.
    """
    times = sorted({b.start for b in buffers} | {b.end for b in buffers})
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for index, buffer in enumerate(buffers):
        starts.setdefault(buffer.start, []).append(index)
        ends.setdefault(buffer.end, []).append(index)
    tree = BranchTree()
    # Max-heap of (-top, index) with lazy deletion of storages that ended.
    tops: list[tuple[int, int]] = []
    live: set[int] = set()
    samples: list[tuple[int, int, int]] = []
    for time in times:
        for index in ends.get(time, ()):
            tree.add(buffers[index].record.branch, -buffers[index].size)
            live.discard(index)
        for index in starts.get(time, ()):
            buffer = buffers[index]
            tree.add(buffer.record.branch, buffer.size)
            live.add(index)
            heapq.heappush(tops, (-(buffer.offset + buffer.size), index))
        while tops and tops[0][1] not in live:
            heapq.heappop(tops)
        samples.append((time, tree.total, -tops[0][0] if tops else 0))
    return samples


def thread_lanes(buffers: tuple[PlacedBuffer, ...]) -> list[int]:
    """A thread number (from 1) per storage such that no two on one thread overlap."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, buffers[i].end, i))
    lanes = [0] * len(buffers)
    busy: list[tuple[int, int]] = []  # (end, lane) of slices still running
    free: list[int] = []
    count = 0
    for index in order:
        start = buffers[index].start
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            count += 1
            lane = count
        lanes[index] = lane
        heapq.heappush(busy, (buffers[index].end, lane))
    return lanes


def _metadata(pid: int, tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "M", "ts": 0, "pid": pid, "tid": tid, "name": name, "args": args}


def _process_events(pid: int, view: PoolView) -> list[dict[str, Any]]:
    events = [
        _metadata(pid, 0, "process_name", {"name": f"@{view.function.name} {view.pool_label}"}),
        _metadata(pid, 0, "process_sort_index", {"sort_index": pid}),
    ]
    lanes = thread_lanes(view.buffers)
    for lane in range(1, max(lanes, default=0) + 1):
        events.append(_metadata(pid, lane, "thread_name", {"name": f"buffers {lane}"}))
        events.append(_metadata(pid, lane, "thread_sort_index", {"sort_index": lane}))
    for time, live, used in counter_samples(view.buffers):
        events.append(
            {
                "ph": "C",
                "ts": time,
                "pid": pid,
                "tid": 0,
                "name": LIVE_COUNTER,
                "args": {"bytes": live},
            }
        )
        events.append(
            {
                "ph": "C",
                "ts": time,
                "pid": pid,
                "tid": 0,
                "name": USED_COUNTER,
                "args": {"bytes": used},
            }
        )
    for buffer, lane in zip(view.buffers, lanes, strict=True):
        events.append(
            {
                "ph": "X",
                "ts": buffer.start,
                "dur": buffer.end - buffer.start,
                "pid": pid,
                "tid": lane,
                "name": buffer.name,
                "cat": buffer.kind,
                "args": {
                    "size": buffer.size,
                    "offset": buffer.offset,
                    "planned": view.planned,
                    "alignment": buffer.record.alignment,
                    "kind": buffer.kind,
                    "lifetime": f"[{buffer.start}, {buffer.end})",
                },
            }
        )
    return events


def format_trace(report: PlanReport) -> str:
    """Chrome trace-event JSON of ``report``: counters and slices per function and pool."""
    events: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    pid = 0
    for function in report.functions:
        for view in pool_views(function):
            pid += 1
            events.extend(_process_events(pid, view))
            pools.append(
                {
                    "pid": pid,
                    "function": function.name,
                    "pool": view.pool.name,
                    "used": view.pool.used,
                    "lower_bound": view.pool.lower_bound,
                    "planned": view.planned,
                }
            )
    other = {
        "generator": "memplan plan-report format=trace",
        "time": "1 us of trace time = 1 op number of the function",
        "module": report.module_name,
        "pools": pools,
    }
    # One event per line: readable, diffable, and still small.
    lines = ",\n".join(json.dumps(event, separators=(",", ":")) for event in events)
    return (
        '{"traceEvents":[\n'
        + lines
        + '\n],\n"otherData":'
        + json.dumps(other, separators=(",", ":"))
        + "}\n"
    )
