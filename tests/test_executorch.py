"""memplan's planner in ExecuTorch's memory planning hook, proven by
ExecuTorch's own runtime: models exported with ``memplan_algorithm()`` run
bit-identical to ExecuTorch's default plan, in an arena at the bound and no
larger than the greedy one; a plan with its offsets collapsed changes the
outputs, so the runtime does place tensors where the plan says."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

# ExecuTorch and torch warn about their own internals at import and export.
pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

with warnings.catch_warnings():  # the same, at import (collection has no marks)
    warnings.simplefilter("ignore")
    import torch  # the [executorch] extra; .[test] installs it
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import Verifier
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.runtime import Runtime

from memplan.tools.executorch import (  # noqa: E402
    MemplanAlgorithm,
    MemplanPlanningError,
    memplan_algorithm,
)

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
    edge = to_edge(torch.export.export(model, example))
    if algo is None:
        return edge.to_executorch(ExecutorchBackendConfig())
    pass_ = MemoryPlanningPass(memory_planning_algo=algo)
    return edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=pass_))


def _arena(program: Any) -> list[int]:
    return list(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def _run(program: Any, example: tuple[Any, ...]) -> list[Any]:
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
    assert Verifier(graph, True, True, True).verify_storage_reuse() > 0


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
