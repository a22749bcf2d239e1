"""Export a PyTorch model for ExecuTorch with memplan's memory planner.

    pip install -e '.[executorch]'
    python examples/executorch_export.py

Exports a 4-layer ``nn.TransformerEncoder`` twice, with ExecuTorch's own
planner and with memplan's (``memory_planning_algo=memplan_algorithm()``),
runs both programs in ExecuTorch's runtime and prints each arena and
whether the outputs agree. ``model.pte`` is the program memplan planned.
"""

from __future__ import annotations

import warnings

warnings.simplefilter("ignore")  # torch's and ExecuTorch's own deprecation notes

import torch  # noqa: E402
from executorch.exir import ExecutorchBackendConfig, to_edge  # noqa: E402
from executorch.exir.passes import MemoryPlanningPass  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402

from memplan.tools.exporters.executorch.hook import memplan_algorithm  # noqa: E402

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(256, 4, 512, dropout=0.0, batch_first=True)
model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval()
example = (torch.randn(1, 128, 256),)

planners = {
    "ExecuTorch's greedy planner": MemoryPlanningPass(),
    "memplan": MemoryPlanningPass(memory_planning_algo=memplan_algorithm()),
}
outputs = {}
for name, planning in planners.items():
    edge = to_edge(torch.export.export(model, example))  # to_executorch consumes it
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    arena = program.executorch_program.execution_plan[0].non_const_buffer_sizes[1]
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    assert method is not None
    outputs[name] = method.execute(list(example))
    print(f"{name}: arena {arena} bytes")
    if name == "memplan":
        with open("model.pte", "wb") as file:
            program.write_to_file(file)
same = all(torch.equal(a, b) for a, b in zip(*outputs.values()))
print("outputs bit-identical" if same else "outputs DIFFER")
