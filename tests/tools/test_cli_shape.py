"""What every tool's command line has in common, through the installed
commands: output paths are checked before the work starts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ONNX = REPO / "tests" / "fixtures" / "onnx"
TFLITE = REPO / "tests" / "fixtures" / "tflite"


def _tool(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / str(argv[0])), *(str(arg) for arg in argv[1:])]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


# --- output paths are checked before the work --------------------------------
#
# Each case gives an input the tool would reject (or spend time on) and an
# output in a missing directory: the error is about the output, so the tool
# looked at it first.

BAD_MLIR = "func.func @f() {\n  %s = memory.alloc_storage : !memory.storage<64>\n"


def test_opt_checks_its_output_before_parsing(tmp_path: Path) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text(BAD_MLIR)
    missing = tmp_path / "missing" / "x.mlir"
    result = _tool("memplan-opt", source, "--plan", "-o", missing)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"memplan-opt: error: cannot write output file '{missing}': No such file or directory\n"
    )


def test_opt_checks_a_report_output_before_any_pass(tmp_path: Path) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text(BAD_MLIR)
    report = tmp_path / "missing" / "x.svg"
    result = _tool("memplan-opt", source, "--plan", f"--plan-report=format=svg output={report}")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"memplan-opt: error: plan-report: cannot write '{report}': No such file or directory\n"
    )


def test_opt_report_output_may_be_relative(tmp_path: Path) -> None:
    """A bare file name is in the working directory, which is writable."""
    result = _tool(
        "memplan-opt",
        REPO / "examples" / "mlp.mlir",
        "--plan",
        "--plan-report=format=json output=plan.json",
        "-o",
        "planned.mlir",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "planned.mlir"]


@pytest.mark.parametrize(
    ("tool", "model"),
    [
        ("memplan-import-onnx", ONNX / "not_onnx.onnx"),
        ("memplan-import-tflite", TFLITE / "not_tflite.tflite"),
    ],
)
def test_importers_check_their_output_before_reading(
    tmp_path: Path, tool: str, model: Path
) -> None:
    missing = tmp_path / "missing" / "x.mlir"
    result = _tool(tool, model, "-o", missing)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"{tool}: error: cannot write output file '{missing}': No such file or directory\n"
    )


def test_run_checks_its_output_before_running(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "o.npz"
    result = _tool("memplan-run", ONNX / "mlp.onnx", "-o", missing)
    assert (result.returncode, result.stdout) == (1, "")  # no "result: OK" first
    assert result.stderr == (
        f"memplan-run: error: cannot write output file '{missing}': No such file or directory\n"
    )


def test_run_checks_a_report_output_before_reading(tmp_path: Path) -> None:
    report = tmp_path / "missing" / "r.txt"
    pipeline = f"--pipeline=manifest-alloc,usmp,plan-report{{output={report}}}"
    result = _tool("memplan-run", ONNX / "not_onnx.onnx", pipeline)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"memplan-run: error: plan-report: cannot write '{report}': No such file or directory\n"
    )


def test_run_saves_outputs_where_asked(tmp_path: Path) -> None:
    """``-o`` goes through a temporary file: the npz lands under its own name
    (numpy would add ``.npz`` to a path without it), nothing else is left."""
    import numpy as np

    result = _tool("memplan-run", ONNX / "mlp.onnx", "-o", tmp_path / "outputs.data")
    assert result.returncode == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["outputs.data"]
    with np.load(tmp_path / "outputs.data") as saved:
        assert saved.files == ["y"]


def test_solve_checks_its_output_before_solving(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "o.csv"
    result = _tool("memplan-solve", REPO / "test_lit/solve/Inputs/five-buffers.csv", "-o", missing)
    assert result.stdout == ""
    assert result.stderr == (
        f"memplan-solve: error: cannot write output file '{missing}': No such file or directory\n"
    )
    assert result.returncode != 0


# --- one shape for usage errors ------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "argv", "message"),
    [
        (
            "memplan-opt",
            ["--plna", "in.mlir"],
            "unrecognized arguments: --plna; did you mean --plan?",
        ),
        (
            "memplan-import-onnx",
            ["m.onnx", "--wieghts=inline"],
            "unrecognized arguments: --wieghts=inline; did you mean --weights?",
        ),
        (
            "memplan-import-tflite",
            ["m.tflite", "--subgrph=1"],
            "unrecognized arguments: --subgrph=1; did you mean --subgraph?",
        ),
        (
            "memplan-run",
            ["m.onnx", "--pipelin=usmp"],
            "unrecognized arguments: --pipelin=usmp; did you mean --pipeline?",
        ),
        (
            "memplan-solve",
            ["p.csv", "--capacty=4"],
            "unrecognized arguments: --capacty=4; did you mean --capacity?",
        ),
        (
            "memplan-import-onnx",
            ["m.onnx", "--weights", "bogus"],
            "argument --weights: invalid choice: 'bogus' (choose from 'external', 'inline')",
        ),
        ("memplan-solve", ["nosuch.csv"], None),
    ],
)
def test_a_usage_error_is_one_line_with_exit_1(
    tmp_path: Path, tool: str, argv: list[str], message: str | None
) -> None:
    """No usage dump, no exit 2 (memplan-opt's internal errors): one line
    naming the problem, with "did you mean" for a misspelt option."""
    result = _tool(tool, *argv, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    if message is None:  # an input that does not exist
        assert result.stderr == (
            f"{tool}: error: nosuch.csv: cannot read: No such file or directory\n"
        )
    else:
        assert result.stderr == f"{tool}: error: {message} (see {tool} --help)\n"


# --- a model given to memplan-opt ----------------------------------------------


@pytest.mark.parametrize(
    ("model", "importer"),
    [
        (ONNX / "mlp.onnx", "memplan-import-onnx"),
        (TFLITE / "convnet.tflite", "memplan-import-tflite"),
    ],
)
def test_opt_on_a_model_says_to_import_it(model: Path, importer: str) -> None:
    """memplan-opt reads MLIR: given a model it names the importer's command,
    also when told to read the model as MLIR (-f mlir)."""
    kind = "an ONNX" if model.suffix == ".onnx" else "a TFLite"
    command = f"{importer} {model} -o {model.stem}.mlir"
    result = _tool("memplan-opt", "--plan", model)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"memplan-opt: error: {model} is {kind} model; memplan-opt reads MLIR\n"
        f"note: import it first: {command}\n"
    )
    forced = _tool("memplan-opt", "--plan", "-f", "mlir", model)
    assert forced.returncode == 1
    assert forced.stderr.endswith(
        f"note: {model} is {kind} model; memplan-opt reads MLIR; import it first: {command}\n"
    )


# --- start-up ------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool",
    [
        "memplan-import-onnx",
        "memplan-import-tflite",
        "memplan-export-tflite",
        "memplan-run",
        "memplan-solve",
    ],
)
@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_load_neither_xdsl_nor_numpy(tool: str, option: str) -> None:
    """They read only the command line: xDSL, NumPy, ONNX and the planning
    algorithms load after it (the tools' start-up drops from ~0.6 s CPU to
    ~0.05 s). memplan-opt's options are xdsl-opt's, so it needs xDSL."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(BIN / tool), option],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert tool in result.stdout
    loaded = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()}
    heavy = {m for m in loaded if m.split(".")[0] in ("xdsl", "numpy", "onnx", "tflite")}
    assert not heavy


# --- progress --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "stages"),
    [
        ("memplan-import-onnx", ("importing {model}", "verifying", "writing")),
        # memplan-run's first stage is the import too: a large model takes
        # seconds before anything runs.
        ("memplan-run", ("importing {model}", "planning with ")),
    ],
)
def test_importers_show_their_stage_on_a_terminal_only(
    tool: str, stages: tuple[str, ...], tmp_path: Path
) -> None:
    """Stderr on a terminal shows each stage (from the start under
    MEMPLAN_PROGRESS_DELAY=0), erased at the end; piped, nothing."""
    import os
    import pty

    model = ONNX / "mlp.onnx"
    argv = [str(BIN / tool), str(model)]
    if tool == "memplan-import-onnx":
        argv += ["-o", str(tmp_path / "o.mlir")]
    env = {**os.environ, "MEMPLAN_PROGRESS_DELAY": "0"}
    leader, follower = pty.openpty()
    with subprocess.Popen(argv, stderr=follower, stdout=subprocess.DEVNULL, env=env) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert process.returncode == 0
    for stage in stages:
        assert f"{tool}: {stage.format(model=model)}" in shown
    assert shown.endswith("\r\x1b[K")
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert piped.stderr == ""


def test_opt_help_imports_no_pass() -> None:
    """memplan-opt --help shows each pass's summary and options from the
    table docs/gen_passes.py writes (passes/flag_help.py), not by importing
    every pass (which doubled its start-up)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(BIN / "memplan-opt"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())
    assert "--usmp Pin every static storage to a memory pool at a byte offset" in shown
    loaded = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()}
    from memplan.passes import get_all_passes

    pass_modules = {get_all_passes()[name]().__module__ for name in get_all_passes()}
    assert not loaded & pass_modules


# --- outputs that fail at the end of the work -------------------------------
#
# The path is fine when the tool starts, but the file cannot be replaced
# (immutable), the device is full, or nothing can be created beside it: one
# line naming the output and the reason, exit 1, the old file untouched.

MLP = REPO / "examples" / "mlp.mlir"
CONVNET_ONNX = ONNX / "convnet.onnx"
WRITERS = [
    ("memplan-opt", MLP, "--plan", "-o"),
    ("memplan-import-onnx", CONVNET_ONNX, "-o"),
    ("memplan-run", CONVNET_ONNX, "--save-outputs"),
    ("memplan-export-tflite", TFLITE / "convnet.tflite", "--fold-dequantize", "-o"),
]


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    """A file that exists and cannot be replaced (``chattr +i``)."""
    path = tmp_path / "immutable.out"
    path.write_text("old\n")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i needs root and a file system that has it")
    yield path
    subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("argv", WRITERS, ids=[w[0] for w in WRITERS])
def test_an_output_that_cannot_be_replaced_is_one_line(
    argv: tuple[str | Path, ...], immutable: Path
) -> None:
    result = _tool(*argv, immutable)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"{argv[0]}: error: cannot write output file '{immutable}': Operation not permitted"
    )
    assert "Traceback" not in result.stderr
    assert immutable.read_text() == "old\n"


@pytest.mark.parametrize("argv", WRITERS, ids=[w[0] for w in WRITERS])
def test_a_full_device_is_one_line(argv: tuple[str | Path, ...]) -> None:
    result = _tool(*argv, "/dev/full")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"{argv[0]}: error: cannot write output file '/dev/full': No space left on device"
    )
    assert "Traceback" not in result.stderr


STDOUT_WRITERS = [
    ("memplan-opt", MLP, "--plan"),
    ("memplan-import", CONVNET_ONNX),
    ("memplan-import-tflite", TFLITE / "convnet.tflite"),
    ("memplan-solve", REPO / "test_lit" / "solve" / "Inputs" / "tight.csv"),
]


@pytest.mark.parametrize("argv", STDOUT_WRITERS, ids=[w[0] for w in STDOUT_WRITERS])
def test_a_reader_that_goes_away_is_no_traceback(argv: tuple[str | Path, ...]) -> None:
    """`tool ... | head`: standard output's reader closes first. The tool
    ends quietly with exit 1, as memplan-opt always did."""
    process = subprocess.Popen(
        [str(BIN / str(argv[0])), *map(str, argv[1:])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the tool writes
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert (process.wait(timeout=120), stderr) == (1, "")


@pytest.mark.parametrize(
    "argv",
    [("memplan-opt", MLP, "--plan"), ("memplan-import-onnx", CONVNET_ONNX)],
    ids=["memplan-opt", "memplan-import-onnx"],
)
def test_a_full_standard_output_is_one_line(argv: tuple[str | Path, ...]) -> None:
    command = [str(BIN / str(argv[0])), *(str(arg) for arg in argv[1:])]
    with open("/dev/full", "w") as full:
        result = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True)
    assert (result.returncode, result.stderr) == (
        1,
        f"{argv[0]}: error: cannot write standard output: No space left on device\n",
    )


def test_memplan_run_on_a_full_standard_output_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [str(BIN / "memplan-run"), str(CONVNET_ONNX)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert (result.returncode, result.stderr) == (
        1,
        "memplan-run: error: cannot write standard output: No space left on device\n",
    )


def test_an_output_where_no_file_can_be_created_says_so() -> None:
    """/proc/version exists, but nothing can be created in /proc."""
    result = _tool("memplan-opt", MLP, "--plan", "-o", "/proc/version")
    assert (result.returncode, result.stderr) == (
        1,
        "memplan-opt: error: cannot write output file '/proc/version': cannot create a "
        "file in '/proc' (No such file or directory)\n",
    )


@pytest.mark.slow
def test_export_tflite_on_a_cut_model_is_one_line_at_every_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every prefix of a model (in steps of 61 bytes) is refused with one
    line and exit 1, and no output file. In-process, through the command's
    own ``main`` (an exception out of it would be the command's traceback);
    the first cut also as the installed command."""
    from memplan.tools import memplan_export

    data = (TFLITE / "complex.tflite").read_bytes()
    cut = tmp_path / "cut.tflite"
    output = tmp_path / "out.tflite"
    failures: list[str] = []
    for length in range(1, len(data), 61):
        cut.write_bytes(data[:length])
        code = memplan_export.main(
            [str(cut), "-o", str(output)], prog="memplan-export-tflite", target="tflm"
        )
        lines = capsys.readouterr().err.splitlines()
        if code != 1 or len(lines) != 1 or output.exists():
            failures.append(f"{length} bytes: exit {code}: {lines[-3:]}")
    assert not failures, "\n".join(failures)
    cut.write_bytes(data[:1])
    result = _tool("memplan-export-tflite", cut, "-o", output)
    assert (result.returncode, len(result.stderr.splitlines())) == (1, 1)
    assert not output.exists()


def test_each_importer_names_the_other_for_the_other_format(tmp_path: Path) -> None:
    onnx = _tool("memplan-import-onnx", TFLITE / "convnet.tflite", "-o", tmp_path / "x.mlir")
    assert (onnx.returncode, onnx.stderr) == (
        1,
        f"memplan-import-onnx: error: {TFLITE / 'convnet.tflite'} is a TFLite model, not an "
        "ONNX one: import it with memplan-import-tflite\n",
    )
    tflite = _tool("memplan-import-tflite", CONVNET_ONNX, "-o", tmp_path / "x.mlir")
    assert (tflite.returncode, tflite.stderr) == (
        1,
        f"memplan-import-tflite: error: {CONVNET_ONNX} is not a TFLite model (no 'TFL3' file "
        "identifier): import it with memplan-import-onnx\n",
    )


def test_memplan_run_on_a_bad_model_prints_only_its_error() -> None:
    result = _tool("memplan-run", TFLITE / "truncated.tflite")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"memplan-run: error: {TFLITE / 'truncated.tflite'} is ")
