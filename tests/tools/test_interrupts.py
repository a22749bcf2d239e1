"""Ctrl-C, SIGTERM and SIGHUP through the installed commands, at two moments:
right after the interrupt handlers are in place (the tool's modules are
still loading) and in the middle of the work. Every tool prints one line,
``<tool>: interrupted``, exits with 128 + the signal's number, leaves its
``-o`` file as it was and no temporary file beside it.

The inputs are generated large enough that the work lasts several seconds;
a run in the work is interrupted 0.3 s after it has opened its output.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.tflite import make_fixtures as fx

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOADING = "loading"
WORKING = "working"

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads /proc/<pid>/status (Linux)"
)


def _mlir_chain(path: Path, count: int) -> None:
    lines = [
        "func.func private @k(tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>",
        "func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {",
    ]
    previous = "%x"
    for i in range(count):
        lines.append(
            f"  %v{i} = func.call @k({previous}, %x) "
            ": (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>"
        )
        previous = f"%v{i}"
    lines += [f"  func.return {previous} : tensor<64xf32>", "}", ""]
    path.write_text("\n".join(lines))


def _onnx_chain(path: Path, count: int) -> None:
    import onnx
    from onnx import TensorProto, helper

    nodes = []
    previous = "x"
    for i in range(count):
        nodes.append(helper.make_node("Add", [previous, "x"], [f"v{i}"]))
        previous = f"v{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [64])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _tflite_chain(path: Path, count: int) -> None:
    tensors = [fx.TensorSpec(f"v{i}", [64], 0) for i in range(count + 1)]
    operators = [fx.OperatorSpec("ADD", [i, 0], [i + 1]) for i in range(count)]
    subgraph = fx.SubgraphSpec(tensors, operators, [0], [count])
    path.write_bytes(fx.build_model([subgraph]))


def _csv_problem(path: Path, count: int) -> None:
    rng = random.Random(1)
    rows = ["id,lower,upper,size"]
    for i in range(count):
        start = rng.randrange(count)
        rows.append(f"{i},{start},{start + rng.randrange(1, 300)},{rng.randrange(1, 1000)}")
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Inputs whose work takes several times the 0.3 s before the signal
    (the import of 8,000 nodes, planning 6,000 calls, solving 20,000
    buffers): a run that ends first replaces its output, as it should."""
    pytest.importorskip("onnx")
    pytest.importorskip("tflite")
    folder = tmp_path_factory.mktemp("slow-inputs")
    _mlir_chain(folder / "chain.mlir", 6000)
    _onnx_chain(folder / "chain.onnx", 8000)
    _tflite_chain(folder / "chain.tflite", 8000)
    _csv_problem(folder / "problem.csv", 20000)
    return folder


def _caught_signals(pid: int) -> int:
    """The mask of signals ``pid`` has handlers for (0 once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def _signals_at(action: signal.Handlers, hang_up: signal.Handlers | None = None) -> None:
    """In the child before it runs the tool: SIGINT, SIGTERM and SIGHUP at
    ``action`` (SIGHUP at ``hang_up`` when given)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, action)
    signal.signal(signal.SIGHUP, hang_up if hang_up is not None else action)


HANDLED = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
"""The signals every tool handles, as a /proc SigCgt mask."""


def _wait_for_handlers(process: subprocess.Popen[bytes], handled: int = HANDLED) -> None:
    """Until the tool has installed its handlers (``handled``, a mask): the
    first thing its entry point does, before it imports the tool's modules.
    (One after the other: a signal sent when only the first is in place
    would meet the default action of the others.)"""
    deadline = time.monotonic() + 60
    while _caught_signals(process.pid) & handled != handled:
        assert process.poll() is None, "the tool ended before it handled signals"
        assert time.monotonic() < deadline, "no signal handlers after 60 s"
        time.sleep(0.002)


def _wait_for_the_work(process: subprocess.Popen[bytes], folder: Path) -> None:
    """Until the tool is at its work: it has loaded its modules and read its
    arguments, and opened its ``-o`` file (a temporary file beside it, which
    every tool creates before the work, so that an unwritable output fails
    first), and a little longer, into the work itself."""
    deadline = time.monotonic() + 60
    while not any(folder.glob(f".out.file.{process.pid}.*.tmp")):
        assert process.poll() is None, "the tool ended before it opened its output"
        assert time.monotonic() < deadline, "no temporary output file after 60 s"
        time.sleep(0.002)
    time.sleep(0.3)


CASES = {
    "memplan-opt": ["{in}/chain.mlir", "--plan", "-o", "{out}"],
    "memplan-import-onnx": ["{in}/chain.onnx", "-o", "{out}"],
    "memplan-import-tflite": ["{in}/chain.tflite", "-o", "{out}"],
    "memplan-run": ["{in}/chain.onnx", "-o", "{out}"],
    "memplan-solve": ["{in}/problem.csv", "-o", "{out}"],
}
SIGNAL_AT = [
    ("memplan-opt", signal.SIGINT, LOADING),
    ("memplan-opt", signal.SIGTERM, WORKING),
    ("memplan-import-onnx", signal.SIGHUP, LOADING),
    ("memplan-import-onnx", signal.SIGINT, WORKING),
    ("memplan-import-tflite", signal.SIGTERM, LOADING),
    ("memplan-import-tflite", signal.SIGHUP, WORKING),
    ("memplan-run", signal.SIGINT, LOADING),
    ("memplan-run", signal.SIGINT, WORKING),
    ("memplan-solve", signal.SIGHUP, LOADING),
    ("memplan-solve", signal.SIGTERM, WORKING),
]


@pytest.mark.parametrize(
    ("tool", "signum", "moment"),
    SIGNAL_AT,
    ids=[f"{tool}-{signal.Signals(signum).name}-{moment}" for tool, signum, moment in SIGNAL_AT],
)
def test_interrupted_tool_says_so_and_leaves_its_output(
    inputs: Path, tmp_path: Path, tool: str, signum: int, moment: str
) -> None:
    output = tmp_path / "out.file"
    output.write_text("the previous output\n")
    argv = [str(BIN / tool)] + [arg.format(**{"in": inputs, "out": output}) for arg in CASES[tool]]
    # The signals at their defaults, as in a terminal, though the tests may
    # run under nohup or as a background job, which ignore SIGHUP or SIGINT
    # (a tool keeps an ignored signal ignored: the test below).
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        preexec_fn=lambda: _signals_at(signal.SIG_DFL),
    )
    try:
        _wait_for_handlers(process)
        if moment == WORKING:
            _wait_for_the_work(process, tmp_path)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # reaps it and closes the pipes
    assert (process.returncode, stderr.decode()) == (128 + signum, f"{tool}: interrupted\n")
    assert b"Traceback" not in stdout  # memplan-run prints a header first
    assert output.read_text() == "the previous output\n"
    assert sorted(os.listdir(tmp_path)) == ["out.file"]


def test_a_signal_the_parent_ignores_stays_ignored(inputs: Path) -> None:
    """Under ``nohup`` SIGHUP is ignored: the tool leaves it so (a hang-up
    does not stop the run) and still handles SIGTERM."""
    argv = [str(BIN / "memplan-solve"), str(inputs / "problem.csv")]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: _signals_at(signal.SIG_DFL, hang_up=signal.SIG_IGN),
    )
    try:
        _wait_for_handlers(process, HANDLED & ~(1 << (signal.SIGHUP - 1)))
        assert not _caught_signals(process.pid) & (1 << (signal.SIGHUP - 1))
        process.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # reaps it and closes the pipes
    assert (process.returncode, stdout, stderr) == (143, b"", b"memplan-solve: interrupted\n")


# Tools whose first interrupt is lost: cleared by the code it interrupted
# (as C code that runs Python code and clears its error may), or raised in a
# finaliser, where Python prints "Exception ignored" and goes on.
LOSING_TOOLS = {
    "swallowed": """
import os, signal, sys, time
from memplan.tools import launch

def main():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    except KeyboardInterrupt:
        pass
    print("went on", flush=True)
    time.sleep(30)
    return 0

sys.exit(launch.run("tool", main))
""",
    "in-finaliser": """
import os, signal, sys, time
from memplan.tools import launch

class Finalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the interrupt arrives here, where it cannot propagate

def main():
    Finalised()
    print("went on", flush=True)
    time.sleep(30)
    return 0

sys.exit(launch.run("tool", main))
""",
}


@pytest.mark.parametrize("case", list(LOSING_TOOLS))
def test_a_lost_interrupt_is_raised_again(case: str) -> None:
    """The run still ends as interrupted (the interrupt is raised again),
    with the first signal's status and only the one line on stderr, instead
    of going on to the end."""
    done = subprocess.run(
        [sys.executable, "-c", LOSING_TOOLS[case]],
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        130,
        b"went on\n",
        b"tool: interrupted\n",
    )
