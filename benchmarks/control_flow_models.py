"""Real ONNX models with control flow: import, plan and prove them.

The models are the six in silero-vad 6.2.3's wheel (`silero_vad/data/*.onnx`,
a voice-activity detector people deploy on small devices), fetched with
``pip download --no-deps silero-vad==6.2.3`` into a cache (``--cache``,
default ``~/.cache/memplan/silero-vad-6.2.3``) and never committed. Four of
them hold ``If`` nodes: PyTorch's ``squeeze`` exports (a test on a shape,
folded by the importer once the input shape is fixed) and, in
``silero_vad.onnx`` and ``silero_vad_op18_ifless.onnx``, an ``If`` on the
sample rate whose branches are whole 16 kHz and 8 kHz models.

For each model, with the input shapes below: ``memplan-import-onnx`` (or
its error), the ``scf.if`` ops and kernel calls left in the IR, the pool
``manifest-alloc,insert-kills,usmp`` gives and its lower bound (the peak of
live bytes), and ``memplan-run``'s verdict: planned vs unplanned (poisoned
memory, every kernel call's inputs compared) and planned vs ONNX's reference
evaluator. ``silero_vad_16k_sequence`` (a batch of 576-sample chunks, its
length the symbolic ``sequence_length``) is measured twice more: fixed at
256 chunks, and planned once for every length up to 256
(``--upper-bound sequence_length=256``), where memplan-run runs it at 1, 128
and 256 chunks against the same plan.

Usage::

    python benchmarks/control_flow_models.py [--cache DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wheels import wheel_files

SILERO = "silero-vad==6.2.3"
DEFAULT_CACHE = Path.home() / ".cache" / "memplan" / "silero-vad-6.2.3"
PLANNING = "manifest-alloc,insert-kills,usmp,verify-plan"
RUN_PIPELINE = "manifest-alloc,insert-kills,usmp"
CHUNK = {"input": (1, 512), "state": (2, 1, 128)}
SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "silero_vad": CHUNK,
    "silero_vad_16k_op15": CHUNK,
    "silero_vad_half": CHUNK,
    "silero_vad_op18_ifless": CHUNK,
    "silero_vad_openvino_16k": {},
    "silero_vad_16k_sequence": {"input": (8, 576)},
}
SEQUENCE_BOUND = 256
EXTRA: list[tuple[str, dict[str, tuple[int, ...]], dict[str, int]]] = [
    # The sequence model once more: fixed at the bound, then planned once for
    # every length up to it (`--upper-bound`), run at 1, 128 and 256 chunks.
    ("silero_vad_16k_sequence", {"input": (SEQUENCE_BOUND, 576)}, {}),
    ("silero_vad_16k_sequence", {}, {"sequence_length": SEQUENCE_BOUND}),
]


def fetch_models(cache: Path) -> list[Path]:
    """The silero-vad models, downloading and extracting the wheel once."""
    return wheel_files(SILERO, cache, "silero_vad/data/", ".onnx")


@dataclass
class Row:
    name: str
    shapes: str
    imported: str
    ifs: int | None = None
    calls: int | None = None
    pool: int | None = None
    lower_bound: int | None = None
    run: str | None = None


def measure(
    path: Path,
    shapes: dict[str, tuple[int, ...]] | None = None,
    bounds: dict[str, int] | None = None,
) -> Row:
    from xdsl.passes import PassPipeline

    from memplan.dialect.context import memplan_context
    from memplan.passes import get_all_passes
    from memplan.passes.plan_report import gather_report
    from memplan.tools.frontends.onnx.importer import import_onnx
    from memplan.tools.frontends.onnx.model import (
        OnnxImportError,
    )

    shapes = SHAPES.get(path.stem, {}) if shapes is None else shapes
    bounds = bounds or {}
    described = " ".join(
        [f"{n}={'x'.join(map(str, d))}" for n, d in shapes.items()]
        + [f"{n}<={b}" for n, b in bounds.items()]
    )
    row = Row(path.stem, described or "as given", "")
    try:
        module = import_onnx(path, shapes, upper_bounds=bounds)
    except OnnxImportError as error:
        row.imported = f"error: {error}"
        return row
    row.imported = "yes"
    row.ifs = sum(1 for op in module.walk() if op.name == "scf.if")
    row.calls = sum(1 for op in module.walk() if op.name == "func.call")
    PassPipeline.parse_spec(get_all_passes(), PLANNING).apply(memplan_context(), module)
    [pool] = [p for f in gather_report(module).functions if f.name == "main" for p in f.pools]
    row.pool, row.lower_bound = pool.used, pool.lower_bound
    row.run = "; ".join(_run(path, shapes, bounds))
    return row


def _run(path: Path, shapes: dict[str, tuple[int, ...]], bounds: dict[str, int]) -> list[str]:
    """memplan-run's verdicts: once with random inputs, or, for a model with a
    sample-rate input ``sr``, once per rate (each takes its own branch), or
    with ``bounds``, once per size memplan-run picks (1, half, the bound)."""
    import numpy as np

    from memplan.tools.runs import run_onnx

    runs: list[tuple[str, dict[str, np.ndarray] | None]] = [("", None)]
    if path.stem in SHAPES and "sr" in _input_names(path):
        runs = []
        for rate in (16000, 8000):
            rng = np.random.default_rng(rate)
            arrays = {n: rng.uniform(-1, 1, d).astype(np.float32) for n, d in shapes.items()}
            runs.append((f"sr={rate}: ", {**arrays, "sr": np.array(rate, dtype=np.int64)}))
    reports = [
        (label + at + (": " if at else ""), report)
        for label, inputs in runs
        for at, report in run_onnx(
            str(path), RUN_PIPELINE, input_shapes=shapes, upper_bounds=bounds, inputs=inputs
        )
    ]
    verdicts: list[str] = []
    for label, report in reports:
        identical = all(o.identical for o in report.outputs) and report.trace_problem is None
        worst = max((o.planned_vs_reference or 0.0 for o in report.outputs), default=0.0)
        verdicts.append(
            f"{label}{'bit-identical' if identical else 'DIFFERS'}, "
            f"reference max abs diff {worst:.2g}{'' if report.ok else ' (FAILED)'}"
        )
    return verdicts


def _input_names(path: Path) -> set[str]:
    import onnx

    return {i.name for i in onnx.load(path, load_external_data=False).graph.input}


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| model | input shapes | imported | scf.if | kernel calls | pool bytes | "
        "lower bound | memplan-run |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(value: object) -> str:
        return "n/a" if value is None else f"{value:,}" if isinstance(value, int) else str(value)

    for r in rows:
        cells = [r.name, r.shapes, r.imported, r.ifs, r.calls, r.pool, r.lower_bound, r.run]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    rows = []
    paths = fetch_models(args.cache)
    by_name = {path.stem: path for path in paths}
    configurations = [(path, None, None) for path in paths]
    configurations += [(by_name[name], shapes, bounds) for name, shapes, bounds in EXTRA]
    for path, shapes, bounds in configurations:
        rows.append(measure(path, shapes, bounds))
        print(f"{path.stem}: {rows[-1].imported[:60]}", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(
            "# Control-flow model results\n\n"
            f"Command: python benchmarks/control_flow_models.py; models from `{SILERO}` "
            "(pip). Generated by `benchmarks/control_flow_models.py` (see its docstring).\n\n"
            + text
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
