"""memplan's planner in ExecuTorch's memory planning hook, proven by
ExecuTorch's own runtime: models exported with ``memplan_algorithm()`` run
bit-identical to ExecuTorch's default plan, in an arena at the bound and no
larger than the greedy one; a plan with its offsets collapsed changes the
outputs, so the runtime does place tensors where the plan says."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# ExecuTorch and torch warn about their own internals at import and export.
pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    # One pytest worker loads ExecuTorch's export pipeline (run_tests.sh
    # distributes by group), not every one.
    pytest.mark.xdist_group("executorch"),
]

with warnings.catch_warnings():  # the same, at import (collection has no marks)
    warnings.simplefilter("ignore")
    import torch  # the [executorch] extra; .[test] installs it

from memplan.tools import memplan_export  # noqa: E402
from memplan.tools.exporters.executorch.hook import (  # noqa: E402
    MemplanAlgorithm,
    MemplanPlanningError,
    memplan_algorithm,
)
from memplan.tools.frontends.pte.program import executorch_serializer  # noqa: E402
from memplan_testing import executorch_exir, run_main  # noqa: E402

nn = torch.nn


class Blocks(nn.Module):
    """Linear layers with a concatenation, a slice and skips: tensors of
    several sizes whose lifetimes overlap unevenly (where greedy's shared
    objects keep holes)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(64, 256)
        self.b = nn.Linear(256, 128)
        self.c = nn.Linear(384, 64)
        self.d = nn.Linear(64, 512)
        self.e = nn.Linear(512, 64)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.a(x))
        g = torch.relu(self.b(h))
        k = self.c(torch.cat([g, h], 1)) + x
        wide = torch.relu(self.d(k))
        return self.e(wide) + k


def _export(model: Any, example: tuple[Any, ...], algo: Callable[..., list[int]] | None) -> Any:
    exir = executorch_exir()
    edge = exir.to_edge(torch.export.export(model, example))
    if algo is None:
        return edge.to_executorch(exir.ExecutorchBackendConfig())
    pass_ = exir.passes.MemoryPlanningPass(memory_planning_algo=algo)
    return edge.to_executorch(exir.ExecutorchBackendConfig(memory_planning_pass=pass_))


def _arena(program: Any) -> list[int]:
    return list(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def _run(program: Any, example: tuple[Any, ...]) -> list[Any]:
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(program.buffer).load_method("forward")
    assert method is not None
    return list(method.execute(list(example)))


@pytest.fixture(scope="module")
def blocks() -> tuple[Any, tuple[Any, ...], Any, list[Any]]:
    torch.manual_seed(0)
    model = Blocks().eval()
    example = (torch.randn(8, 64),)
    greedy = _export(model, example, None)
    return model, example, greedy, _run(greedy, example)


def test_memplans_plan_runs_bit_identical_in_an_arena_at_the_bound(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]],
) -> None:
    model, example, greedy, expected = blocks
    algo = memplan_algorithm()
    program = _export(model, example, algo)
    [record] = algo.records
    assert record.sizes == record.bounds  # the peak of live bytes: no plan is smaller
    assert _arena(program)[1] == record.sizes[1] <= _arena(greedy)[1]
    outputs = _run(program, example)
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected))
    # ExecuTorch's own check of the plan: no two tensors live together share bytes.
    graph = program.exported_program().graph_module
    assert (
        executorch_exir().memory_planning.Verifier(graph, True, True, True).verify_storage_reuse()
        > 0
    )


def test_collapsed_offsets_change_the_outputs(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]],
) -> None:
    """The proof can fail: every tensor moved to offset 0 gives other outputs."""
    model, example, _, expected = blocks

    class Collapsed(MemplanAlgorithm):
        def __call__(self, *args: Any, **kwargs: Any) -> list[int]:
            sizes = super().__call__(*args, **kwargs)
            for spec in args[1]:
                spec.mem_offset = 0
            return sizes

    outputs = _run(_export(model, example, Collapsed()), example)
    assert not all(torch.equal(a, b) for a, b in zip(outputs, expected))


def test_a_capacity_too_small_is_one_clear_error(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]],
) -> None:
    model, example, _, _ = blocks
    with pytest.raises(
        MemplanPlanningError, match=r"memory 1: no plan within its capacity of 1024"
    ):
        _export(model, example, memplan_algorithm(capacities={1: 1024}))


def test_bad_options_name_what_they_take() -> None:
    with pytest.raises(ValueError, match="memplan: algorithm must be one of .* \\(got 'fast'\\)"):
        memplan_algorithm("fast")
    with pytest.raises(ValueError, match=r"memplan: budget must be non-negative \(got -1\)"):
        memplan_algorithm(budget=-1)


# --- memplan-export-pte: re-planning a built program -------------------------


def _export_pte(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``memplan-export-pte`` on ``argv``, run in this process (ExecuTorch and
    torch are loaded here already; lit runs the command itself)."""
    return run_main(memplan_export.main, *argv, prog="memplan-export-pte", target="pte")


@pytest.fixture(scope="module")
def greedy_pte(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The blocks model as ExecuTorch's default planner writes it."""
    path = tmp_path_factory.mktemp("pte") / "greedy.pte"
    path.write_bytes(blocks[2].buffer)
    return path


def _run_file(path: Path, example: tuple[Any, ...]) -> list[Any]:
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(path.read_bytes()).load_method("forward")
    assert method is not None
    return list(method.execute(list(example)))


def test_export_pte_replans_a_built_program_that_runs_bit_identical(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]], greedy_pte: Path, tmp_path: Path
) -> None:
    """Lifetimes and views recovered from the program alone: the re-planned
    program runs bit-identical to the original, in an arena at the bound
    (what memplan_algorithm reaches at export time) and below the greedy one."""
    _, example, greedy, expected = blocks
    out = tmp_path / "memplan.pte"
    result = _export_pte(greedy_pte, "-o", out)
    assert result.returncode == 0, result.stderr
    before = _arena(greedy)[1]
    [line] = result.stdout.splitlines()
    after = int(line.split("memory 1: ")[1].split()[0])
    assert line == (
        f"{out}: method 'forward', memory 1: {after} bytes (the program's own plan: {before}; "
        f"lower bound {after}), " + line.split("), ")[1]
    )
    assert after < before
    assert all(torch.equal(a, b) for a, b in zip(_run_file(out, example), expected))


def test_a_corrupted_replanned_program_changes_the_outputs(
    blocks: tuple[Any, tuple[Any, ...], Any, list[Any]], greedy_pte: Path, tmp_path: Path
) -> None:
    """The runtime follows the offsets memplan-export-pte wrote: every tensor
    of OUT moved to offset 0 gives other outputs."""
    serializer = executorch_serializer()

    _, example, _, expected = blocks
    out = tmp_path / "memplan.pte"
    assert _export_pte(greedy_pte, "-o", out).returncode == 0
    program = serializer.deserialize_pte_binary(out.read_bytes())
    for value in program.program.execution_plan[0].values:
        details = getattr(value.val, "allocation_info", None)
        if details is not None:
            details.memory_offset_low = 0
    corrupted = tmp_path / "corrupted.pte"
    corrupted.write_bytes(bytes(serializer.serialize_pte_binary(program)))
    outputs = _run_file(corrupted, example)
    assert not all(torch.equal(a, b) for a, b in zip(outputs, expected))


@pytest.mark.slow
def test_export_pte_refuses_bad_input_in_one_line(greedy_pte: Path, tmp_path: Path) -> None:
    """Not a program, a cut program, a capacity too small, a delegate: one
    line each, exit 1, no output file."""
    not_pte = tmp_path / "model.pte"
    not_pte.write_text("hello\n")
    cut = tmp_path / "cut.pte"
    cut.write_bytes(greedy_pte.read_bytes()[:3000])
    out = tmp_path / "out.pte"
    cases = [
        ((not_pte,), f"{not_pte} is not an ExecuTorch program (no 'ETnn' file identifier)"),
        ((cut,), f"{cut} is truncated or corrupt ("),
        (
            (greedy_pte, "--capacity", "1=1024"),
            "method 'forward', memory 1: no plan within 1024 bytes (its tensors need at least ",
        ),
    ]
    for argv, message in cases:
        result = _export_pte(*argv, "-o", out)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith(f"memplan-export-pte: error: {message}")
        assert len(result.stderr.splitlines()) == 1 and not out.exists()


@pytest.mark.slow
def test_export_pte_refuses_a_program_with_a_delegate(tmp_path: Path) -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU()).eval()
    exported = torch.export.export(model, (torch.randn(2, 16),))
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    path = tmp_path / "xnnpack.pte"
    path.write_bytes(lowered.to_executorch().buffer)
    result = _export_pte(path, "-o", tmp_path / "out.pte")
    assert (result.returncode, result.stderr) == (
        1,
        "memplan-export-pte: error: method 'forward' has 1 delegate(s), whose memory the "
        "program does not show: memplan-export-pte plans programs without delegates\n",
    )


def test_export_pte_refuses_control_flow_by_name(tmp_path: Path) -> None:
    class Branches(nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.cond(x.sum() > 0, lambda x: x.sin() + 1, lambda x: x.cos() - 1, (x,))

    path = tmp_path / "cond.pte"
    path.write_bytes(_export(Branches(), (torch.randn(4),), None).buffer)
    result = _export_pte(path, "-o", tmp_path / "out.pte")
    assert (result.returncode, result.stderr) == (
        1,
        "memplan-export-pte: error: method 'forward' has control flow (a JumpFalseCall at "
        "instruction 2); memplan-export-pte plans straight-line methods\n",
    )


# The `.pte` reader runs beneath a stand-in for `executorch.exir` (its
# `__init__` loads the whole export pipeline); a process that reads a `.pte`
# first and then uses the real package must get the real package, whole.
_READ_THEN_EXPORT = """
import sys
from memplan.tools.frontends.pte.program import load_pte
first = load_pte(open(sys.argv[1], "rb").read(), "greedy.pte")
assert "executorch.exir" not in sys.modules, "the stand-in outlived the read"
from executorch.exir import to_edge
from executorch.exir.passes import MemoryPlanningPass
import executorch.exir
assert executorch.exir.to_edge is to_edge and callable(MemoryPlanningPass)
again = load_pte(open(sys.argv[1], "rb").read(), "greedy.pte")
print(len(first.program.execution_plan), len(again.program.execution_plan))
"""


def test_reading_a_pte_leaves_executorch_whole(greedy_pte: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _READ_THEN_EXPORT, str(greedy_pte)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]


class _WideActivations(torch.nn.Module):
    """Two wide element-wise activations between two linear layers: the peak
    of live bytes is at the activations, where input and output are both
    live (256 x 1,024 floats each, against 64 x 1,024 for a layer's
    transposed weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(64, 1024), torch.nn.Linear(1024, 64)

    def forward(self, x: Any) -> Any:
        return self.down(torch.sigmoid(torch.relu(self.up(x))))


def test_export_pte_writes_element_wise_outputs_into_dying_inputs(tmp_path: Path) -> None:
    """By default the activations write into their dying inputs' bytes, which
    takes the arena below the order's lower bound; `--no-inplace` plans at
    the bound. Both run bit-identical to ExecuTorch's own plan."""
    torch.manual_seed(0)
    model, example = _WideActivations().eval(), (torch.randn(256, 64),)
    greedy = _export(model, example, None)
    expected = _run(greedy, example)
    source = tmp_path / "greedy.pte"
    source.write_bytes(greedy.buffer)
    arenas: dict[str, tuple[int, int]] = {}
    for flags in ((), ("--no-inplace",)):
        out = tmp_path / f"memplan{len(flags)}.pte"
        result = _export_pte(source, "-o", out, *flags)
        assert result.returncode == 0, result.stderr
        [line] = result.stdout.splitlines()
        after = int(line.split("memory 1: ")[1].split()[0])
        bound = int(line.split("lower bound ")[1].split(")")[0])
        arenas[" ".join(flags)] = (after, bound)
        assert all(torch.equal(a, b) for a, b in zip(_run_file(out, example), expected))
        if not flags:
            assert ", 2 in a dying input's bytes;" in line
    (shared, bound), (unshared, same_bound) = arenas[""], arenas["--no-inplace"]
    assert bound == same_bound == unshared
    # At the bound the activations' 1 MiB input and output were both live;
    # in place, the peak is the first layer's: x, its transposed weights, h.
    assert bound == 2 * 256 * 1024 * 4
    assert shared == 256 * 64 * 4 + 64 * 1024 * 4 + 256 * 1024 * 4


def test_the_hook_writes_element_wise_outputs_into_dying_inputs() -> None:
    """Through ExecuTorch's hook, in place (the default) takes the arena
    below the order's bound and `inplace=False` plans at it; both run
    bit-identical to ExecuTorch's own plan, and ExecuTorch's verifier, not
    allowed any overlap of lifetime and storage, accepts the shared pairs
    (each output's spec is backed by its input's)."""
    torch.manual_seed(0)
    model, example = _WideActivations().eval(), (torch.randn(256, 64),)
    expected = _run(_export(model, example, None), example)
    arenas: dict[bool, int] = {}
    for inplace in (True, False):
        algo = memplan_algorithm(inplace=inplace)
        program = _export(model, example, algo)
        [record] = algo.records
        arenas[inplace] = _arena(program)[1]
        assert record.sizes[1] == arenas[inplace] == record.bounds[1]
        assert record.order_bounds[1] == 2 * 256 * 1024 * 4
        assert record.shared[1] == (2 if inplace else 0)
        assert all(torch.equal(a, b) for a, b in zip(_run(program, example), expected))
        graph = program.exported_program().graph_module
        assert (
            executorch_exir()
            .memory_planning.Verifier(graph, True, True, True)
            .verify_storage_reuse(False)
            > 0
        )
    assert arenas[False] == 2 * 256 * 1024 * 4
    assert arenas[True] == 256 * 64 * 4 + 64 * 1024 * 4 + 256 * 1024 * 4


class _Branches(torch.nn.Module):
    """Two wide branches the program runs side by side: both 1 MiB
    activations are live together in its order, one at a time in an order
    that finishes a branch before starting the next."""

    def __init__(self) -> None:
        super().__init__()
        self.up1, self.up2 = torch.nn.Linear(64, 1024), torch.nn.Linear(64, 1024)
        self.down1, self.down2 = torch.nn.Linear(1024, 64), torch.nn.Linear(1024, 64)

    def forward(self, x: Any) -> Any:
        a, b = torch.relu(self.up1(x)), torch.relu(self.up2(x))
        return self.down1(a) + self.down2(b)


@pytest.fixture(scope="module")
def branches(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[Any, ...], list[Any]]:
    """The branches model as ExecuTorch's greedy planner writes it, its
    input and the outputs ExecuTorch's runtime gives."""
    torch.manual_seed(0)
    model, example = _Branches().eval(), (torch.randn(256, 64),)
    greedy = _export(model, example, None)
    path = tmp_path_factory.mktemp("branches") / "greedy.pte"
    path.write_bytes(greedy.buffer)
    return path, example, _run(greedy, example)


def _arena_and_bound(line: str) -> tuple[int, int]:
    after = int(line.split("memory 1: ")[1].split()[0])
    return after, int(line.split("lower bound ")[1].split(")")[0])


def test_export_pte_reorders_instructions_below_the_programs_order(
    branches: tuple[Path, tuple[Any, ...], list[Any]], tmp_path: Path
) -> None:
    """By default the instructions run in the order of lowest peak: the
    order's bound falls from both branches' activations live together to
    one branch's; `--no-reorder` keeps the program's order. Each program,
    with in place and without, runs bit-identical to ExecuTorch's own plan,
    the same input gives the same bytes, and a program already in its best
    order keeps it."""
    source, example, expected = branches
    mib = 256 * 1024 * 4
    lines: dict[str, str] = {}
    for flags in ((), ("--no-reorder",), ("--no-inplace",), ("--no-inplace", "--no-reorder")):
        out = tmp_path / f"{'-'.join(flags) or 'default'}.pte"
        result = _export_pte(source, "-o", out, *flags)
        assert result.returncode == 0, result.stderr
        [lines[" ".join(flags)]] = result.stdout.splitlines()
        assert all(torch.equal(a, b) for a, b in zip(_run_file(out, example), expected))
    # The program holds both branches' activations and one pre-activation;
    # reordered, one branch's pre-activation and activation beside x.
    program_bound, reordered_bound = 3 * mib, 2 * mib + 256 * 64 * 4
    for flags in ("", "--no-inplace"):
        assert lines[flags].endswith(
            f"; reordered: the order's bound {program_bound} -> {reordered_bound}"
        )
    for flags in ("--no-reorder", "--no-inplace --no-reorder"):
        assert "order" not in lines[flags].split("), ")[1]
        assert _arena_and_bound(lines[flags])[1] == program_bound
    assert _arena_and_bound(lines["--no-inplace"]) == (reordered_bound, reordered_bound)
    assert _arena_and_bound(lines["--no-inplace --no-reorder"]) == (program_bound, program_bound)
    # In place on top of the order: below either bound (the program's plan:
    # 3,211,264 bytes).
    assert f"the program's own plan: {3 * mib + 64 * 1024}" in lines[""]
    assert _arena_and_bound(lines[""]) == (1441792, reordered_bound)
    assert _arena_and_bound(lines[""])[0] < _arena_and_bound(lines["--no-reorder"])[0]
    again = tmp_path / "again.pte"
    assert _export_pte(source, "-o", again).returncode == 0
    assert again.read_bytes() == (tmp_path / "default.pte").read_bytes()
    # A program already in its best order is kept, and the line says so.
    twice = _export_pte(tmp_path / "--no-inplace.pte", "-o", tmp_path / "twice.pte", "--no-inplace")
    assert twice.returncode == 0, twice.stderr
    [line] = twice.stdout.splitlines()
    assert f"(the program's own plan: {reordered_bound}; lower bound {reordered_bound})" in line
    assert line.endswith("; the program's order kept (no order tried has a lower peak)")


def test_a_reordered_plan_run_in_the_programs_order_changes_the_outputs(
    branches: tuple[Path, tuple[Any, ...], list[Any]], tmp_path: Path
) -> None:
    """The proof can fail: memplan's offsets are for the new order (a
    tensor reuses bytes the program's order still needs), so the reordered
    program's chain put back in the program's order gives other outputs."""
    serializer = executorch_serializer()

    source, example, expected = branches
    out = tmp_path / "reordered.pte"
    assert _export_pte(source, "-o", out, "--no-inplace").returncode == 0
    original = serializer.deserialize_pte_binary(source.read_bytes()).program.execution_plan[0]
    program = serializer.deserialize_pte_binary(out.read_bytes())
    chain = program.program.execution_plan[0].chains[0]
    assert chain.instructions != original.chains[0].instructions
    chain.instructions = original.chains[0].instructions
    put_back = tmp_path / "put-back.pte"
    put_back.write_bytes(bytes(serializer.serialize_pte_binary(program)))
    outputs = _run_file(put_back, example)
    assert not all(torch.equal(a, b) for a, b in zip(outputs, expected))
