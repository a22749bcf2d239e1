"""plan-report's svg, trace and c-header formats (passes/report_formats).

Every format is checked against the plan as the JSON report (``format=json``,
another writer) gives it, on a planned and an unplanned module:

- svg: parses as XML, one ``<rect>`` per static storage, each at the
  coordinates its lifetime and offset give on its panel's scale; labels fit
  their rect and never overlap, also at 2,000 buffers;
- trace: every event has the trace-event fields, slices of one thread never
  overlap, one slice per storage, the ``used`` counter peaks at the pool's
  used bytes and ``live`` at the peak of live bytes;
- c-header: gcc compiles it (-std=c99 -Wall -Werror) and a program built on
  it prints the plan's pool sizes, alignments and offsets.

All formats leave the IR unchanged and write ``output=`` only on success.
"""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.ops import AllocStorageOp
from memplan.dialect.size_expr import parse_size_expr
from memplan.passes.analysis.parametric import ParametricPool, parametric_pools
from memplan.passes.plan_report import PlanReportPass, gather_report
from memplan.passes.planning.bounds import peak_live_bytes
from memplan.passes.planning.model import Buffer
from memplan.passes.report_formats.common import format_bytes, format_bytes_exact
from memplan.passes.report_formats.svg import (
    CHAR_WIDTH,
    KERNEL_LABEL_GAP,
    LABEL_FONT,
    MIN_EXTENT,
    byte_step,
    op_step,
)
from memplan.passes.report_formats.trace import thread_lanes
from memplan.tools.memplan_opt import main
from memplan_testing import (
    examples,
    memplan_context,
    parse_module,
    print_module,
    run_passes,
)

REPO = Path(__file__).resolve().parents[2]
SVG_NS = "{http://www.w3.org/2000/svg}"

# ---------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------


HAND_PINNED = """
module @tiny_net {
  memory.pool @sram size 4096 align 32
  memory.pool @dram
  func.func private @k(memref<16xf32>, memref<16xf32>)
  func.func @first(%p: i1) -> memref<16xf32> {
    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
    %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
    %b = memory.alloc_storage at @sram[64] : !memory.storage<256>
    %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<16xf32>
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
    memory.kill %a : !memory.storage<64>
    %c = memory.alloc_storage at @sram[320] : !memory.storage<128>
    %tc = memory.alloc_tensor %c[64] : !memory.storage<128> -> memref<16xf32>
    memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
    scf.if %p {
      %x = memory.alloc_storage at @dram[0] : !memory.storage<512>
      scf.yield
    } else {
      %y = memory.alloc_storage at @dram[0] : !memory.storage<1024>
      scf.yield
    }
    func.return %tc : memref<16xf32>
  }
  func.func @second() {
    %z = memory.alloc_storage at @sram[0] : !memory.storage<2048>
    func.return
  }
}
"""


def _convnet(planned: bool) -> ModuleOp:
    module = parse_module((REPO / "examples" / "convnet.mlir").read_text(), verify=True)
    spec = "manifest-alloc,insert-kills" + (",usmp" if planned else "")
    return run_passes(module, spec)


def _hand_pinned(planned: bool) -> ModuleOp:
    text = HAND_PINNED if planned else re.sub(r" at @\w+\[\d+\]", "", HAND_PINNED)
    return parse_module(text, verify=True)


MODULES = {
    "convnet-planned": lambda: _convnet(True),
    "convnet-unplanned": lambda: _convnet(False),
    "hand-pinned": lambda: _hand_pinned(True),
    "hand-unplanned": lambda: _hand_pinned(False),
}


@pytest.fixture(params=sorted(MODULES), scope="module")
def module_case(request: pytest.FixtureRequest) -> tuple[str, ModuleOp]:
    return request.param, MODULES[request.param]()


def _report(module: ModuleOp, fmt: str, tmp_path: Path, **options: str) -> str:
    path = tmp_path / f"report.{fmt}"
    PlanReportPass(format=fmt, output=str(path), **options).apply(memplan_context(), module)
    return path.read_text()


def _plan(module: ModuleOp, tmp_path: Path) -> dict[str, Any]:
    return json.loads(_report(module, "json", tmp_path))


def _static(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in function["buffers"] if b["size"] is not None]


def _shown_offsets(function: dict[str, Any], pool: str) -> dict[str, int]:
    """Offsets as the plan gives them, or the documented stacking when unplanned."""
    members = [(i, b) for i, b in enumerate(_static(function)) if b["pool"] == pool]
    if all(b["offset"] is not None for _, b in members):
        return {b["name"]: b["offset"] for _, b in members}
    offsets: dict[str, int] = {}
    top = 0
    for _, b in sorted(members, key=lambda item: (item[1]["start"], item[0])):
        offsets[b["name"]] = top
        top += b["size"]
    return offsets


# ---------------------------------------------------------------------------
# svg
# ---------------------------------------------------------------------------


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Box) -> bool:
        return (
            self.x < other.x + other.w
            and other.x < self.x + self.w
            and self.y < other.y + other.h
            and other.y < self.y + self.h
        )

    def contains(self, other: Box) -> bool:
        eps = 0.02
        return (
            self.x - eps <= other.x
            and other.x + other.w <= self.x + self.w + eps
            and self.y - eps <= other.y
            and other.y + other.h <= self.y + self.h + eps
        )


def _panels(root: ET.Element) -> Iterator[ET.Element]:
    yield from (g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "panel")


def _rect_box(rect: ET.Element) -> Box:
    return Box(*(float(rect.get(key, "nan")) for key in ("x", "y", "width", "height")))


def _label_boxes(panel: ET.Element) -> list[tuple[str, Box]]:
    boxes = []
    for text in panel.iter(f"{SVG_NS}text"):
        if text.get("class") != "label":
            continue
        name = text.text or ""
        width = len(name) * CHAR_WIDTH
        x, y = float(text.get("x", "nan")), float(text.get("y", "nan"))
        boxes.append((name, Box(x - width / 2, y - 3.5 - LABEL_FONT / 2, width, LABEL_FONT)))
    return boxes


def test_svg_has_one_rect_per_buffer_where_the_plan_puts_it(
    module_case: tuple[str, ModuleOp], tmp_path: Path
) -> None:
    _, module = module_case
    plan = _plan(module, tmp_path)
    root = ET.fromstring(_report(module, "svg", tmp_path))
    assert root.tag == f"{SVG_NS}svg"
    rects = list(root.iter(f"{SVG_NS}rect"))
    assert len(rects) == sum(len(_static(f)) for f in plan["functions"])

    functions = {f["name"]: f for f in plan["functions"]}
    seen: set[tuple[str, str]] = set()
    for panel in _panels(root):
        function = functions[panel.get("data-function", "")]
        pool = panel.get("data-pool", "")
        buffers = {b["name"]: b for b in _static(function) if b["pool"] == pool}
        offsets = _shown_offsets(function, pool)
        x0, y0 = float(panel.get("data-x0", "nan")), float(panel.get("data-y0", "nan"))
        per_op = float(panel.get("data-px-per-op", "nan"))
        per_byte = float(panel.get("data-px-per-byte", "nan"))
        t0 = min(b["start"] for b in buffers.values())
        assert int(panel.get("data-t0", "-1")) == t0
        panel_rects = list(panel.iter(f"{SVG_NS}rect"))
        assert sorted(r.get("data-name", "") for r in panel_rects) == sorted(buffers)
        for rect in panel_rects:
            name = rect.get("data-name", "")
            buffer = buffers[name]
            seen.add((function["name"], name))
            box = _rect_box(rect)
            width = max((buffer["end"] - buffer["start"]) * per_op, MIN_EXTENT)
            height = max(buffer["size"] * per_byte, MIN_EXTENT)
            assert box.x == pytest.approx(x0 + (buffer["start"] - t0) * per_op, abs=0.01)
            assert box.w == pytest.approx(width, abs=0.01)
            assert box.h == pytest.approx(height, abs=0.01)
            assert box.y + box.h == pytest.approx(y0 - offsets[name] * per_byte, abs=0.02)
            kind = (
                "output"
                if buffer["escapes"]
                else "constant"
                if buffer["read_only"]
                else "activation"
            )
            assert rect.get("class") == kind
            title = rect.find(f"{SVG_NS}title")
            assert title is not None and title.text is not None
            assert title.text.startswith(f"{name} ({kind}): ")
            assert f"live [{buffer['start']}, {buffer['end']})" in title.text
        # The used and lower-bound lines sit at the pool's numbers.
        record = next(p for p in function["pools"] if p["name"] == pool)
        lines = {line.get("class"): line for line in panel.iter(f"{SVG_NS}line")}
        assert float(lines["used"].get("y1", "nan")) == pytest.approx(
            y0 - record["used"] * per_byte, abs=0.01
        )
        assert float(lines["bound"].get("y1", "nan")) == pytest.approx(
            y0 - record["lower_bound"] * per_byte, abs=0.01
        )
        for name, label in _label_boxes(panel):
            for rect in panel_rects:
                if rect.get("data-name") == name:
                    assert _rect_box(rect).contains(label)
                else:
                    assert not _rect_box(rect).overlaps(label)
    assert len(seen) == len(rects)


def _big_module(count: int = 2000, window: int = 24, seed: int = 7) -> str:
    """``count`` storages, ``window`` live at a time, each in a slot of its own."""
    rng = random.Random(seed)
    slot = 64 * 64
    sizes = [64 * rng.randint(1, 64) for _ in range(count)]
    lines = [
        "memory.pool @sram align 64",
        "func.func private @use(memref<16xf32>)",
        "func.func @big() {",
    ]
    for i in range(count):
        if i >= window:
            j = i - window
            lines.append(f"  memory.kill %b{j} : !memory.storage<{sizes[j]}>")
        lines.append(
            f"  %b{i} = memory.alloc_storage at @sram[{(i % window) * slot}] "
            f": !memory.storage<{sizes[i]}>"
        )
    lines += ["  func.return", "}"]
    return "\n".join(lines)


def test_svg_stays_readable_at_2000_buffers(tmp_path: Path) -> None:
    module = parse_module(_big_module(), verify=True)
    text = _report(module, "svg", tmp_path)
    assert len(text.encode()) < 1_000_000, "about 200 bytes per buffer"
    root = ET.fromstring(text)
    rects = list(root.iter(f"{SVG_NS}rect"))
    assert len(rects) == 2000
    assert all(_rect_box(r).w >= MIN_EXTENT and _rect_box(r).h >= MIN_EXTENT for r in rects)
    (panel,) = _panels(root)
    labels = _label_boxes(panel)
    assert labels, "big enough rects are named"
    assert len(labels) < len(rects), "rects too small for their name are not"
    for i, (_, box) in enumerate(labels):
        assert not any(box.overlaps(other) for _, other in labels[i + 1 :])
    by_name = {r.get("data-name"): _rect_box(r) for r in rects}
    assert all(by_name[name].contains(box) for name, box in labels)


def test_svg_of_convnet_shows_every_buffer_and_names_the_kernels(tmp_path: Path) -> None:
    """Through the CLI: the 40-byte outputs of convnet.mlir share a 64 KiB
    pool, yet every buffer is a rect of at least MIN_EXTENT pixels (3, so a
    few pixels on screen) with a tooltip; the time axis names the kernels at
    their op numbers, never two closer than KERNEL_LABEL_GAP pixels."""
    example = Path(__file__).resolve().parents[2] / "examples" / "convnet.mlir"
    svg, report = tmp_path / "plan.svg", tmp_path / "plan.json"
    for fmt, path in (("svg", svg), ("json", report)):
        argv = ["--manifest-alloc", "--insert-kills", "--usmp"]
        argv += [f'--plan-report=format={fmt} output="{path}"', str(example)]
        assert main([*argv, "-o", str(tmp_path / "out.mlir")]) == 0
    (function,) = json.loads(report.read_text())["functions"]
    root = ET.fromstring(svg.read_text())
    rects = {r.get("data-name", ""): r for r in root.iter(f"{SVG_NS}rect")}
    assert set(rects) == {b["name"] for b in function["buffers"]}
    assert MIN_EXTENT >= 3
    for name, rect in rects.items():
        box = _rect_box(rect)
        assert box.w >= MIN_EXTENT and box.h >= MIN_EXTENT, name
        title = rect.find(f"{SVG_NS}title")
        assert title is not None and title.text and title.text.startswith(name)
    kernels = [t for t in root.iter(f"{SVG_NS}text") if t.get("class") == "kernel"]
    names = [t.text or "" for t in kernels]
    assert names[0].startswith("conv2d") and any(n.startswith("softmax") for n in names)
    xs = [float(t.get("x", "nan")) for t in kernels]
    assert all(b - a >= KERNEL_LABEL_GAP for a, b in zip(xs, xs[1:]))
    ops = [int(t.get("data-op", "-1")) for t in kernels]
    assert ops == sorted(ops) and len(set(ops)) == len(ops)


def test_svg_labels_do_not_overlap_when_rects_share_bytes(tmp_path: Path) -> None:
    # Two storages of an scf.if, both yielded out so both live after it, may
    # share bytes in time and space: a name written in one rect would lie
    # over the other, so neither is named (the tooltips still are).
    module = parse_module(
        """
        memory.pool @sram
        func.func private @w(memref<16xf32>)
        func.func private @use(memref<16xf32>)
        func.func @branches(%p: i1) {
          %r = scf.if %p -> (memref<16xf32>) {
            %x = memory.alloc_storage at @sram[0] : !memory.storage<1024>
            %tx = memory.alloc_tensor %x[0] : !memory.storage<1024> -> memref<16xf32>
            memory.invoke @w outs(%tx : memref<16xf32>)
            scf.yield %tx : memref<16xf32>
          } else {
            %y = memory.alloc_storage at @sram[0] : !memory.storage<1024>
            %ty = memory.alloc_tensor %y[0] : !memory.storage<1024> -> memref<16xf32>
            memory.invoke @w outs(%ty : memref<16xf32>)
            scf.yield %ty : memref<16xf32>
          }
          memory.invoke @use ins(%r : memref<16xf32>)
          memory.invoke @use ins(%r : memref<16xf32>)
          memory.invoke @use ins(%r : memref<16xf32>)
          func.return
        }
        """,
        verify=True,
    )
    root = ET.fromstring(_report(module, "svg", tmp_path))
    (panel,) = _panels(root)
    assert len(list(panel.iter(f"{SVG_NS}rect"))) == 2
    assert _label_boxes(panel) == []


# ---------------------------------------------------------------------------
# trace
# ---------------------------------------------------------------------------

PHASES = {"M", "C", "X"}


def test_trace_follows_the_trace_event_format(
    module_case: tuple[str, ModuleOp], tmp_path: Path
) -> None:
    _, module = module_case
    plan = _plan(module, tmp_path)
    document = json.loads(_report(module, "trace", tmp_path))
    # Perfetto's importer stops at the first top-level key it does not know
    # and finds "ts" only before any array-valued key of an event.
    assert list(document) == ["traceEvents", "otherData"]
    events = document["traceEvents"]
    for event in events:
        assert list(event)[:2] == ["ph", "ts"]
        assert event["ph"] in PHASES
        assert isinstance(event["ts"], int) and event["ts"] >= 0
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str) and event["name"]
        if event["ph"] == "X":
            assert isinstance(event["dur"], int) and event["dur"] > 0
        if event["ph"] == "C":
            assert set(event["args"]) == {"bytes"} and isinstance(event["args"]["bytes"], int)
        if event["ph"] == "M":
            assert event["name"] in {
                "process_name",
                "process_sort_index",
                "thread_name",
                "thread_sort_index",
            }

    # Slices of one thread never overlap (so no viewer has to nest them).
    by_thread: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for event in events:
        if event["ph"] == "X":
            by_thread.setdefault((event["pid"], event["tid"]), []).append(
                (event["ts"], event["ts"] + event["dur"])
            )
    for spans in by_thread.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))

    functions = {f["name"]: f for f in plan["functions"]}
    processes = document["otherData"]["pools"]
    assert len(processes) == sum(
        1
        for f in plan["functions"]
        for p in f["pools"]
        if any(b["pool"] == p["name"] for b in _static(f))
    )
    for process in processes:
        function = functions[process["function"]]
        record = next(p for p in function["pools"] if p["name"] == process["pool"])
        buffers = [b for b in _static(function) if b["pool"] == process["pool"]]
        slices = {e["name"]: e for e in events if e["ph"] == "X" and e["pid"] == process["pid"]}
        assert sorted(slices) == sorted(b["name"] for b in buffers)
        offsets = _shown_offsets(function, process["pool"])
        for buffer in buffers:
            event = slices[buffer["name"]]
            assert (event["ts"], event["ts"] + event["dur"]) == (buffer["start"], buffer["end"])
            assert (event["args"]["size"], event["args"]["offset"]) == (
                buffer["size"],
                offsets[buffer["name"]],
            )
        counters: dict[str, list[int]] = {"live": [], "used": []}
        for event in events:
            if event["ph"] == "C" and event["pid"] == process["pid"]:
                counters[event["name"]].append(event["args"]["bytes"])
        assert max(counters["used"]) == record["used"]
        planning_buffers = [
            Buffer(
                b["name"], b["size"], b["start"], b["end"], branch=tuple(map(tuple, b["branch"]))
            )
            for b in buffers
        ]
        assert max(counters["live"]) == peak_live_bytes(planning_buffers) <= record["lower_bound"]
        assert counters["live"][-1] == counters["used"][-1] == 0


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 10)), max_size=30))
def test_trace_threads_are_as_few_as_the_most_overlapping_slices(
    spans: list[tuple[int, int]],
) -> None:
    @dataclass(frozen=True)
    class Span:
        start: int
        end: int

    buffers = tuple(Span(start, start + length) for start, length in spans)
    lanes = thread_lanes(buffers)  # type: ignore[arg-type]
    for i, a in enumerate(buffers):
        for j in range(i + 1, len(buffers)):
            b = buffers[j]
            if lanes[i] == lanes[j]:
                assert a.end <= b.start or b.end <= a.start
    deepest = max((sum(1 for b in buffers if b.start <= t < b.end) for t in range(60)), default=0)
    assert max(lanes, default=0) == deepest


# ---------------------------------------------------------------------------
# c-header
# ---------------------------------------------------------------------------


def _macro(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_header_compiles_and_gives_the_plan(
    module_case: tuple[str, ModuleOp], tmp_path: Path
) -> None:
    case, module = module_case
    plan = _plan(module, tmp_path)
    report = gather_report(module)
    header = tmp_path / "plan.h"
    header.write_text(_report(module, "c-header", tmp_path))
    prefix = _macro(report.module_name) if report.module_name else "MEMPLAN"
    struct = f"{prefix.lower()}_pools"

    lines = ["#include <stdio.h>", '#include "plan.h"']
    body = []
    pools = plan["pools"]
    for pool in pools:
        stem = f"{prefix}_{_macro(pool['name'])}"
        lines.append(f"static uint8_t pool_{_macro(pool['name'])}[{stem}_SIZE + 1];")
        body.append(
            f'printf("pool {pool["name"]} %ld %ld\\n", (long){stem}_SIZE, (long){stem}_ALIGNMENT);'
        )
    expected = [
        f"pool {p['name']} {p['used']} {p['alignment']}" for p in _pool_alignments(module, pools)
    ]
    if pools:
        members = ", ".join(f"pool_{_macro(p['name'])}" for p in pools)
        body[:0] = [f"{struct} pools = {{{members}}};", "(void)pools;"]
    for function in plan["functions"]:
        for buffer in _static(function):
            if buffer["offset"] is None:
                continue
            stem = f"{prefix}_{_macro(function['name'])}_{_macro(buffer['name'])}"
            base = f"pool_{_macro(buffer['pool'])}"
            body.append(
                f'printf("offset {buffer["name"]} %ld %ld\\n", (long){stem}_OFFSET, '
                f"(long)({stem}_PTR(&pools) - {base}));"
            )
            expected.append(f"offset {buffer['name']} {buffer['offset']} {buffer['offset']}")
    planned = all(b["offset"] is not None for f in plan["functions"] for b in _static(f))
    body.append(f'printf("planned %d\\n", {prefix}_PLANNED);')
    expected.append(f"planned {int(planned)}")
    lines += ["int main(void) {", *(f"    {line}" for line in body), "    return 0;", "}"]
    program = tmp_path / "main.c"
    program.write_text("\n".join(lines) + "\n")
    binary = tmp_path / "main"
    for flags in (["-fsyntax-only", "-x", "c", str(header)], [str(program), "-o", str(binary)]):
        result = subprocess.run(
            ["gcc", "-std=c99", "-Wall", "-Werror", *flags],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, f"{case}: {result.stderr}\n{header.read_text()}"
    output = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    assert output.splitlines() == expected
    if case.startswith("convnet") and planned:
        assert any(line.startswith("offset") for line in expected)


def _pool_alignments(module: ModuleOp, pools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pool with the alignment its base needs: its own and its pinned storages'."""
    from memplan.dialect import AllocStorageOp, PoolOp

    alignment = {
        op.sym_name.data: op.alignment_value for op in module.ops if isinstance(op, PoolOp)
    }
    for op in module.walk():
        if isinstance(op, AllocStorageOp) and op.pinned is not None:
            name = op.pinned[0]
            alignment[name] = max(alignment[name], op.alignment_value)
    return [{**pool, "alignment": alignment[pool["name"]]} for pool in pools]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_header_alignment_aligns_every_storage(tmp_path: Path) -> None:
    """A C program that follows the header (pool array aligned to _ALIGNMENT, and
    no more: the base is placed at an odd multiple of it) gets every storage
    at an address as aligned as the storage asks (64 in convnet.mlir, whose
    pool is only 16-aligned)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "convnet.mlir"
    header, report = tmp_path / "plan.h", tmp_path / "plan.json"
    for fmt, path in (("c-header", header), ("json", report)):
        code = main(
            [
                "--manifest-alloc",
                "--insert-kills",
                "--usmp",
                f'--plan-report=format={fmt} output="{path}"',
                str(example),
                "-o",
                str(tmp_path / "out.mlir"),
            ]
        )
        assert code == 0
    plan = json.loads(report.read_text())
    (function,) = plan["functions"]
    storages = [b for b in function["buffers"] if b["offset"] is not None]
    assert {b["alignment"] for b in storages} == {64}
    checks = [
        f"if ((uintptr_t)MEMPLAN_MAIN_{_macro(b['name'])}_PTR(&pools) % {b['alignment']} != 0) "
        f'{{ printf("misaligned {b["name"]}\\n"); bad = 1; }}'
        for b in storages
    ]
    program = tmp_path / "main.c"
    program.write_text(
        "\n".join(
            [
                "#include <stdint.h>",
                "#include <stdio.h>",
                '#include "plan.h"',
                "#define ALIGN MEMPLAN_WORKSPACE_CPU_ALIGNMENT",
                "static uint8_t raw[MEMPLAN_WORKSPACE_CPU_SIZE + 2 * ALIGN]",
                "    __attribute__((aligned(2 * ALIGN)));",
                "int main(void) {",
                "    memplan_pools pools = {raw + ALIGN};",
                "    int bad = 0;",
                *(f"    {check}" for check in checks),
                '    printf("alignment %d\\n", ALIGN);',
                "    return bad;",
                "}",
            ]
        )
        + "\n"
    )
    binary = tmp_path / "main"
    subprocess.run(
        ["gcc", "-std=gnu99", "-Wall", "-Werror", str(program), "-o", str(binary)],
        check=True,
        cwd=tmp_path,
    )
    result = subprocess.run([str(binary)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "alignment 64"


def test_c_header_prefix_must_be_a_c_identifier(tmp_path: Path) -> None:
    module = _hand_pinned(True)
    with pytest.raises(PassFailedException, match="prefix '9lives' is not a C identifier"):
        PlanReportPass(format="c-header", prefix="9lives").apply(memplan_context(), module)
    text = _report(module, "c-header", tmp_path, prefix="Board_A")
    assert "#define BOARD_A_SRAM_SIZE 2048" in text
    assert "typedef struct board_a_pools {" in text


# ---------------------------------------------------------------------------
# Parametric plans (offsets as functions of the dims)
# ---------------------------------------------------------------------------

PARAMETRIC_BATCH = REPO / "test_lit" / "Inputs" / "parametric-batch.mlir"


def _parametric_programs(module: ModuleOp) -> dict[str, list[ParametricPool]]:
    """The offset programs of each function, as ``analysis.parametric`` reads them."""
    return {
        func.sym_name.data: parametric_pools(
            func, [op for op in func.walk() if isinstance(op, AllocStorageOp)]
        )
        for func in module.walk()
        if isinstance(func, FuncOp)
    }


def _compile_and_run(tmp_path: Path, header: str, lines: list[str]) -> list[str]:
    """Build ``main`` (``lines``, its body) on ``header`` in strict C99 and run it."""
    (tmp_path / "plan.h").write_text(header)
    program = tmp_path / "main.c"
    program.write_text(
        "\n".join(
            [
                "#include <stdio.h>",
                '#include "plan.h"',
                "int main(void) {",
                *(f"    {line}" for line in lines),
                "    return 0;",
                "}",
            ]
        )
        + "\n"
    )
    binary = tmp_path / "main"
    result = subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            str(program),
            "-o",
            str(binary),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, f"{result.stderr}\n{header}"
    return subprocess.run(
        [str(binary)], capture_output=True, text=True, check=True
    ).stdout.splitlines()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_header_computes_the_parametric_plan_at_each_batch_size(tmp_path: Path) -> None:
    """dynamic_batch.onnx's plan (N in 1..64, the pool 80*N bytes): the
    header's functions, compiled in strict C99, give at N = 1, 32, 64 the
    offsets and pool bytes ``ParametricPool`` computes, and its check function
    refuses N = 0 and N = 65."""
    module = parse_module(PARAMETRIC_BATCH.read_text(), verify=True)
    (pool,) = _parametric_programs(module)["main"]
    header = _report(module, "c-header", tmp_path)
    sizes = (1, 32, 64)
    lines = ["size_t offsets[MEMPLAN_MAIN_WORKSPACE_CPU_SLOTS];"]
    for n in sizes:
        lines += [
            f"memplan_main_workspace_cpu_offsets({n}, offsets);",
            f'printf("N={n} %d %lu %lu %lu %lu\\n", memplan_main_dims_ok({n}), '
            "(unsigned long)offsets[MEMPLAN_MAIN_H1_STORAGE_SLOT], "
            "(unsigned long)offsets[MEMPLAN_MAIN_Y_STORAGE_SLOT], "
            "(unsigned long)offsets[MEMPLAN_MAIN_H6_STORAGE_SLOT], "
            f"(unsigned long)memplan_main_workspace_cpu_size({n}));",
        ]
    lines.append('printf("refused %d %d\\n", memplan_main_dims_ok(0), memplan_main_dims_ok(65));')
    slot = {s.alloc.storage.name_hint: s.slot for s in pool.storages}
    expected = []
    for n in sizes:
        offsets = pool.offsets({"N": n})
        by_name = [offsets[slot[name]] for name in ("h1_storage", "y_storage", "h6_storage")]
        assert pool.size({"N": n}) == 80 * n
        expected.append(f"N={n} 1 {' '.join(map(str, by_name))} {80 * n}")
    expected.append("refused 0 0")
    assert _compile_and_run(tmp_path, header, lines) == expected
    # The static defines stay: the plan at the upper bound.
    assert "#define MEMPLAN_MAIN_H6_STORAGE_OFFSET 4096" in header
    assert "#define MEMPLAN_WORKSPACE_CPU_SIZE 5120" in header


def _every_expression_module(above_count: int = 7) -> str:
    """Two dims (one whose name C cannot take as is) and reserves with every
    kind of size expression node; a static storage in the program; a last
    storage above many slots (its statement is broken over lines)."""
    reserves = [
        "4*H*w.len",
        "(H + 3)*2*w.len + 8",
        "max(16*H, 4*w.len*w.len)",
        "4*ceildiv(H, 3)*w.len",
        "floordiv(5*H*w.len + 7, 2)",
        "align(3*H, 32) + 5",
        None,  # static, 100 bytes
        "align(max(H, w.len), 8)*ceildiv(w.len + 1, 4)",
    ]
    upper = {"H": 40, "w.len": 17}
    lines = [
        "memory.pool @sram",
        "func.func @f(%x: memref<?x?xf32>, %n: index) attributes {memory.dim_ranges = "
        '{H = array<i64: 1, 40>, "w.len" = array<i64: 2, 17>}, '
        'memory.dim_symbols = {H = array<i64: 0, 0>, "w.len" = array<i64: 0, 1>}} {',
    ]
    aligns = [16, 64, 8, 32, 64, 1, 32, 64]
    count = len(reserves)
    for k, reserve in enumerate(reserves):
        above = list(range(k))[-above_count:] if k == count - 1 else list(range(k))[k // 2 : k]
        slot = f"memory.slot = {k} : i64, memory.above = array<i64{': ' if above else ''}{', '.join(map(str, above))}>"
        if reserve is None:
            lines.append(
                f"  %s{k} = memory.alloc_storage align {aligns[k]} at @sram[0] {{{slot}}} : !memory.storage<100>"
            )
            continue
        bound = parse_size_expr(reserve).evaluate(upper)
        lines.append(
            f"  %s{k} = memory.alloc_storage(%n) max {bound} align {aligns[k]} at @sram[0] "
            f'{{memory.reserve = "{reserve}", {slot}}} : !memory.storage<?>'
        )
    lines += ["  func.return", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_header_functions_agree_with_the_program_for_every_expression(tmp_path: Path) -> None:
    """Sums, products of sums, maxima, ceildiv, floordiv, align, a static
    storage, two dims (one renamed for C), over a grid that covers both
    ranges' ends: C gives Python's offsets and pool bytes at every point,
    and the check function accepts exactly the points inside the ranges."""
    module = parse_module(_every_expression_module(), verify=True)
    (pool,) = _parametric_programs(module)["f"]
    header = _report(module, "c-header", tmp_path)
    assert "static inline int memplan_f_dims_ok(size_t H, size_t w_len) {" in header
    assert "return H >= 1 && H <= 40 && w_len >= 2 && w_len <= 17;" in header
    count = len(pool.storages)
    grid = [(h, w) for h in (0, 1, 2, 7, 39, 40, 41) for w in (1, 2, 3, 16, 17, 18)]
    lines = ["size_t offsets[MEMPLAN_F_SRAM_SLOTS];", "int k;"]
    for h, w in grid:
        lines += [
            f'printf("%d", memplan_f_dims_ok({h}, {w}));',
            f"memplan_f_sram_offsets({h}, {w}, offsets);",
            f'for (k = 0; k < {count}; k++) printf(" %lu", (unsigned long)offsets[k]);',
            f'printf(" %lu\\n", (unsigned long)memplan_f_sram_size({h}, {w}));',
        ]
    expected = []
    for h, w in grid:
        inside = 1 <= h <= 40 and 2 <= w <= 17
        dims = {"H": h, "w.len": w}
        values = [*pool.offsets(dims), pool.size(dims)]
        line = f"{int(inside)} {' '.join(map(str, values))}"
        expected.append(line)
    output = _compile_and_run(tmp_path, header, lines)
    # Outside the ranges the functions still run (no undefined behaviour);
    # only the points inside are the plan's.
    inside_rows = [(o, e) for o, e in zip(output, expected) if e.startswith("1")]
    assert [o for o, _ in inside_rows] == [e for _, e in inside_rows]
    assert [o[0] for o in output] == [e[0] for e in expected]


def test_json_gives_the_parametric_plan(tmp_path: Path) -> None:
    """Per pool the size expression, its value at the ranges' ends and the
    dims; per storage its slot, above, reserve and offset expression, which
    evaluate to the offsets the program gives."""
    module = parse_module(_every_expression_module(), verify=True)
    (pool,) = _parametric_programs(module)["f"]
    (function,) = _plan(module, tmp_path)["functions"]
    (sram,) = function["pools"]
    assert sram["parametric"] == {
        "size": str(pool.size_expr),
        "at_lower": pool.size({"H": 1, "w.len": 2}),
        "at_upper": pool.size({"H": 40, "w.len": 17}),
        "dims": {"H": [1, 40], "w.len": [2, 17]},
    }
    buffers = sorted(function["buffers"], key=lambda b: b["slot"])
    assert [b["slot"] for b in buffers] == list(range(len(pool.storages)))
    for dims in ({"H": 1, "w.len": 2}, {"H": 13, "w.len": 5}, {"H": 40, "w.len": 17}):
        offsets = [parse_size_expr(b["offset_expr"]).evaluate(dims) for b in buffers]
        assert offsets == pool.offsets(dims)
    for buffer, storage in zip(buffers, pool.storages):
        assert buffer["above"] == list(storage.above)
        if buffer["slot"] == 6:  # the static storage: no reserve
            assert "reserve" not in buffer
        else:
            assert buffer["reserve"] == str(storage.size)


def test_static_plans_have_no_parametric_fields(
    module_case: tuple[str, ModuleOp], tmp_path: Path
) -> None:
    _, module = module_case
    text = _report(module, "json", tmp_path)
    for key in ('"parametric"', '"slot"', '"above"', '"reserve"', '"offset_expr"'):
        assert key not in text
    assert "parametric pool" not in _report(module, "text", tmp_path)
    assert "size_t" not in _report(module, "c-header", tmp_path)


# ---------------------------------------------------------------------------
# All formats
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "svg", "trace", "c-header"])
def test_formats_leave_the_ir_unchanged(
    module_case: tuple[str, ModuleOp], fmt: str, tmp_path: Path
) -> None:
    _, module = module_case
    before = print_module(module)
    text = _report(module, fmt, tmp_path)
    assert text
    assert print_module(module) == before


@pytest.mark.parametrize("fmt", ["svg", "trace", "c-header"])
def test_output_is_written_only_on_success(fmt: str, tmp_path: Path) -> None:
    # A recursive function that allocates cannot be planned: the analysis
    # fails, and an existing output file keeps its content.
    module = parse_module(
        """
        func.func @recursive(%n: i1) {
          %s = memory.alloc_storage : !memory.storage<64>
          scf.if %n {
            func.call @recursive(%n) : (i1) -> ()
          }
          func.return
        }
        """,
        verify=True,
    )
    path = tmp_path / "report.out"
    path.write_text("previous")
    with pytest.raises(PassFailedException, match="recursive"):
        PlanReportPass(format=fmt, output=str(path)).apply(memplan_context(), module)
    assert path.read_text() == "previous"


def test_formats_through_memplan_opt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(HAND_PINNED)
    outputs = {fmt: tmp_path / f"plan.{fmt}" for fmt in ("svg", "trace", "c-header")}
    for fmt, path in outputs.items():
        with redirect_stderr(io.StringIO()):
            code = main(
                [
                    str(source),
                    f'--plan-report=format={fmt} output="{path}"',
                    "-o",
                    str(tmp_path / "out.mlir"),
                ]
            )
        assert code == 0
    capsys.readouterr()
    assert ET.fromstring(outputs["svg"].read_text()).tag == f"{SVG_NS}svg"
    assert json.loads(outputs["trace"].read_text())["otherData"]["module"] == "tiny_net"
    assert "#define TINY_NET_SRAM_SIZE 2048" in outputs["c-header"].read_text()
    code = main([str(source), "--plan-report=format=svg prefix=x"])
    assert code == 1
    assert "option 'prefix' applies to format=c-header, not 'svg'" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------


def test_byte_units() -> None:
    assert [format_bytes(n) for n in (0, 40, 1024, 1536, 3 * 2**20, 2**30 + 2**29)] == [
        "0 B",
        "40 B",
        "1 KiB",
        "1.5 KiB",
        "3 MiB",
        "1.5 GiB",
    ]
    assert format_bytes_exact(40) == "40 B"
    assert format_bytes_exact(32768) == "32 KiB (32768 B)"


@given(st.integers(1, 2**40))
def test_byte_ticks_are_powers_of_two_and_few(top: int) -> None:
    step = byte_step(top)
    assert step & (step - 1) == 0
    assert step * 8 >= top and (step == 1 or step * 4 < top)


@given(st.integers(1, 10**7))
def test_op_ticks_are_1_2_5_steps_and_few(ops: int) -> None:
    step = op_step(ops)
    assert int(str(step)[0]) in (1, 2, 5) and set(str(step)[1:]) <= {"0"}
    assert step * 12 >= ops


# ---------------------------------------------------------------------------
# The README's rendering script
# ---------------------------------------------------------------------------


def test_render_memory_map_script(tmp_path: Path) -> None:
    # The README image's pipeline (import, plan, svg, png) on a small ONNX
    # model; the PNG only when a renderer is installed (it is optional).
    pytest.importorskip("onnx")
    try:
        import cairosvg  # type: ignore[import-not-found]  # noqa: F401

        png = True
    except ImportError:
        png = shutil.which("rsvg-convert") is not None
    model = REPO / "tests" / "fixtures" / "onnx" / "convnet.onnx"
    command = [
        sys.executable,
        str(REPO / "examples" / "render_memory_map.py"),
        "--model",
        str(model),
        "--out-dir",
        str(tmp_path),
        *([] if png else ["--no-png"]),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "@workspace_cpu" in result.stdout
    root = ET.fromstring((tmp_path / "memory-map-convnet.svg").read_text())
    assert len(list(root.iter(f"{SVG_NS}rect"))) > 0
    if png:
        assert (tmp_path / "memory-map-convnet.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
