"""`memplan-import --planned`: an ExecuTorch program's own plan in the
memory dialect, checked by `verify-plan`. A storage-backed view is a view
of its base, an element-wise output written over an input that is still
read later is reported naming both tensors, and bad input is one line."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    # One pytest worker loads ExecuTorch's export pipeline (run_tests.sh
    # distributes by group), not every one.
    pytest.mark.xdist_group("executorch"),
]

with warnings.catch_warnings():  # torch warns about itself at import
    warnings.simplefilter("ignore")
    torch = pytest.importorskip("torch")

from memplan.tools import memplan_import, memplan_opt  # noqa: E402
from memplan.tools.frontends.pte.program import executorch_serializer  # noqa: E402
from memplan_testing import executorch_exir, run_main  # noqa: E402


class _ViewThenAdd(torch.nn.Module):
    """``h`` is read through a view (``v``, in ``h``'s bytes) after the add
    that reads ``h`` itself."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.a(x))
        v = h.view(16, 128)
        w = torch.sigmoid(v).reshape(8, 256) + h
        return self.b(w), v.sum(0)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    exir = executorch_exir()
    edge = exir.to_edge(torch.export.export(_ViewThenAdd().eval(), (torch.randn(8, 64),)))
    path = tmp_path_factory.mktemp("pte") / "view.pte"
    path.write_bytes(edge.to_executorch(exir.ExecutorchBackendConfig()).buffer)
    return path


def _tool(name: str, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``memplan-import`` or ``memplan-opt`` on ``argv``, run in this process
    (lit runs the commands themselves)."""
    main = {"memplan-import": memplan_import.main, "memplan-opt": memplan_opt.main}[name]
    return run_main(main, *argv)


def _moved(source: Path, target: Path, move: dict[int, int | None]) -> Path:
    """``source`` with value ``i``'s offset set to value ``move[i]``'s (or
    past the memory's end for ``None``)."""
    pte = executorch_serializer().deserialize_pte_binary(source.read_bytes())
    plan = pte.program.execution_plan[0]
    values: list[Any] = [value.val for value in plan.values]
    for index, onto in move.items():
        details = values[index].allocation_info
        if onto is None:
            details.memory_offset_low = int(plan.non_const_buffer_sizes[1])
        else:
            details.memory_offset_low = values[onto].allocation_info.memory_offset_low
    target.write_bytes(bytes(executorch_serializer().serialize_pte_binary(pte)))
    return target


def _tensor_index(text: str, operator: str) -> list[int]:
    """The value indices of the outs of the first invoke of ``operator``."""
    line = next(line for line in text.splitlines() if f"memory.invoke @pte.aten.{operator}" in line)
    outs = line.split("outs(")[1].split(":")[0]
    return [int(name.strip().lstrip("%v")) for name in outs.split(",")]


def test_views_are_views_of_their_base_and_the_plan_verifies(program: Path, tmp_path: Path) -> None:
    out = tmp_path / "planned.mlir"
    result = _tool("memplan-import", program, "--planned", "-o", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    # `h.view(16, 128)` has no instruction: a tensor in h's bytes, read first.
    assert "memref.reinterpret_cast" in text
    assert text.count("memory.pool @pte_mem1 size ") == 1
    verified = _tool("memplan-opt", out, "--verify-plan", "-o", tmp_path / "out.mlir")
    assert verified.returncode == 0, verified.stderr


def test_an_output_over_an_input_read_later_names_both_tensors(
    program: Path, tmp_path: Path
) -> None:
    """The add's output moved onto ``h`` (its operand, read later through
    the view by the sum): carved in place of ``h``, which verify-plan
    refuses, since ``h`` is still needed."""
    planned = tmp_path / "planned.mlir"
    assert _tool("memplan-import", program, "--planned", "-o", planned).returncode == 0
    text = planned.read_text()
    [added] = _tensor_index(text, "add.out")
    add_line = next(line for line in text.splitlines() if "memory.invoke @pte.aten.add.out" in line)
    h = int(add_line.split("ins(")[1].split(":")[0].split(",")[1].strip().lstrip("%v"))
    corrupted = _moved(program, tmp_path / "corrupted.pte", {added: h})
    out = tmp_path / "corrupted.mlir"
    assert _tool("memplan-import", corrupted, "--planned", "-o", out).returncode == 0
    assert f"%v{added} = memory.alloc_tensor %v{h}_storage[0] {{memory.inplace_of = 1 : i64}}" in (
        out.read_text()
    )
    verified = _tool("memplan-opt", out, "--verify-plan", "-o", tmp_path / "out.mlir")
    assert verified.returncode == 1
    first = verified.stderr.splitlines()[0]
    assert first.startswith(f"{out}:")
    assert f"error: verify-plan: tensor %v{h} (bytes [0, 8192) of storage %v{h}_storage" in first
    assert f"and tensor %v{added} (bytes [0, 8192) of storage %v{h}_storage" in first
    assert first.endswith("are live together but share bytes")


def test_bad_input_is_one_line_and_no_output(program: Path, tmp_path: Path) -> None:
    past = _moved(program, tmp_path / "past.pte", {4: None})
    size = (
        executorch_serializer()
        .deserialize_pte_binary(program.read_bytes())
        .program.execution_plan[0]
    )
    end = int(size.non_const_buffer_sizes[1])
    out = tmp_path / "out.mlir"
    result = _tool("memplan-import", past, "--planned", "-o", out)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"memplan-import: error: method 'forward', value 4: placed at bytes [{end}, "
        f"{end + 2048}) of memory 1, past its {end} bytes (non_const_buffer_sizes)\n"
    )
    assert not out.exists()


def test_the_python_api_takes_the_option(program: Path) -> None:
    from memplan.tools.frontends.registry import frontend

    pte = frontend("pte")
    planned = pte.import_module(str(program), pte.options_type(planned=True))
    assert [op.name for op in planned.ops][0] == "memory.pool"


class _Accumulate(torch.nn.Module):
    """A mutable buffer: ``total`` is read (what the previous run left)
    before the method writes it back."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(8, 64))

    def forward(self, x: Any) -> Any:
        self.total.add_(x)
        return torch.relu(x) * self.total


def test_a_mutable_buffer_lives_over_the_whole_method(tmp_path: Path) -> None:
    """Read before anything writes it, the buffer holds the previous run's
    value: `--planned` keeps its storage live to the method's end (never
    killed), as `memplan-export pte` plans it, and verify-plan accepts."""
    torch.manual_seed(0)
    exir = executorch_exir()
    edge = exir.to_edge(torch.export.export(_Accumulate().eval(), (torch.randn(8, 64),)))
    source = tmp_path / "accumulate.pte"
    source.write_bytes(edge.to_executorch(exir.ExecutorchBackendConfig()).buffer)
    planned = tmp_path / "accumulate.mlir"
    assert _tool("memplan-import", source, "--planned", "-o", planned).returncode == 0
    text = planned.read_text()
    [buffer] = _tensor_index(text, "copy_")
    assert f"%v{buffer}_storage = memory.alloc_storage" in text
    assert f"memory.kill %v{buffer}_storage" not in text
    assert _tool("memplan-opt", planned, "--verify-plan", "-o", "/dev/null").returncode == 0
