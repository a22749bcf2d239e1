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
evaluator.

Usage::

    python benchmarks/control_flow_models.py [--cache DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SILERO = "silero-vad==6.2.3"
DEFAULT_CACHE = Path.home() / ".cache" / "memplan" / "silero-vad-6.2.3"
PLANNING = "manifest-alloc,insert-kills,usmp,verify-plan"
CHUNK = ["--input-shape", "input=1x512", "--input-shape", "state=2x1x128"]
SHAPES: dict[str, list[str]] = {
    "silero_vad": CHUNK,
    "silero_vad_16k_op15": CHUNK,
    "silero_vad_half": CHUNK,
    "silero_vad_op18_ifless": CHUNK,
    "silero_vad_openvino_16k": [],
    "silero_vad_16k_sequence": ["--input-shape", "input=8x576"],
}


def fetch_models(cache: Path) -> list[Path]:
    """The silero-vad models, downloading and extracting the wheel once."""
    models = cache / "models"
    if not models.is_dir() or not any(models.glob("*.onnx")):
        cache.mkdir(parents=True, exist_ok=True)
        wheels = sorted(cache.glob("silero_vad-*.whl"))
        if not wheels:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", SILERO]
                + ["-d", str(cache)],
                check=True,
            )
            wheels = sorted(cache.glob("silero_vad-*.whl"))
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.startswith("silero_vad/data/") and name.endswith(".onnx"):
                    target = models / Path(name).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
    return sorted(models.glob("*.onnx"))


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


def _tool(name: str) -> list[str]:
    return [sys.executable, "-m", f"memplan.tools.{name.replace('-', '_')}"]


def measure(path: Path, work: Path) -> Row:
    from xdsl.parser import Parser
    from xdsl.passes import PassPipeline

    from memplan.dialect.context import memplan_context
    from memplan.passes import get_all_passes
    from memplan.passes.plan_report import gather_report

    shapes = SHAPES.get(path.stem, [])
    row = Row(path.stem, " ".join(s for s in shapes if s != "--input-shape") or "as given", "")
    mlir = work / f"{path.stem}.mlir"
    imported = subprocess.run(
        [*_tool("memplan-import-onnx"), str(path), *shapes, "-o", str(mlir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if imported.returncode != 0:
        row.imported = "error: " + imported.stderr.strip().removeprefix(
            "memplan-import-onnx: error: "
        )
        return row
    row.imported = "yes"
    ctx = memplan_context()
    module = Parser(ctx, mlir.read_text()).parse_module()
    row.ifs = sum(1 for op in module.walk() if op.name == "scf.if")
    row.calls = sum(1 for op in module.walk() if op.name == "func.call")
    PassPipeline.parse_spec(get_all_passes(), PLANNING).apply(ctx, module)
    [pool] = [p for f in gather_report(module).functions for p in f.pools]
    row.pool, row.lower_bound = pool.used, pool.lower_bound
    row.run = "; ".join(_run(path, shapes, work))
    return row


def _run(path: Path, shapes: list[str], work: Path) -> list[str]:
    """memplan-run's verdicts: once with random inputs, or, for a model with a
    sample-rate input ``sr``, once per rate (each takes its own branch)."""
    import numpy as np
    import onnx

    inputs = {i.name for i in onnx.load(path, load_external_data=False).graph.input}
    runs: list[tuple[str, list[str]]] = [("", [])]
    if "sr" in inputs:
        runs = []
        dims = dict(s.split("=") for s in shapes if "=" in s)
        for rate in (16000, 8000):
            rng = np.random.default_rng(rate)
            arrays: dict[str, np.ndarray] = {
                name: rng.uniform(-1, 1, [int(d) for d in dims[name].split("x")]).astype(np.float32)
                for name in dims
            }
            arrays["sr"] = np.array(rate, dtype=np.int64)
            npz = work / f"{path.stem}-{rate}.npz"
            np.savez(npz, **arrays)  # pyright: ignore[reportArgumentType] (numpy stubs: **kwds vs allow_pickle)
            runs.append((f"sr={rate}: ", ["--inputs", str(npz)]))
    verdicts: list[str] = []
    for label, extra in runs:
        run = subprocess.run(
            [*_tool("memplan-run"), str(path), *shapes, *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        outputs = [line.split()[2:] for line in run.stdout.splitlines()[4:] if "[" in line]
        identical = all(v[:1] == ["bit-identical"] for v in outputs)
        worst = max((float(v[-1]) for v in outputs), default=0.0)
        verdicts.append(
            label
            + (
                f"{'bit-identical' if identical else 'DIFFERS'}, reference max abs diff {worst:.2g}"
                if run.returncode == 0
                else "FAILED: " + (run.stderr.strip().splitlines() or ["?"])[-1]
            )
        )
    return verdicts


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
    work = args.cache / "work"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in fetch_models(args.cache):
        rows.append(measure(path, work))
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
