"""Writes a small ExecuTorch program planned by ExecuTorch's own greedy
planner to the path given: two wide branches (64 -> 1024 -> 64 on a
256 x 64 input) that the program runs side by side, so both branches'
1 MiB activations are live together in its order."""

import sys
import warnings

from built_program import write_built_program


def build() -> bytes:
    warnings.simplefilter("ignore")
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge

    class Branches(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up1, self.up2 = torch.nn.Linear(64, 1024), torch.nn.Linear(64, 1024)
            self.down1, self.down2 = torch.nn.Linear(1024, 64), torch.nn.Linear(1024, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = torch.relu(self.up1(x)), torch.relu(self.up2(x))
            return self.down1(a) + self.down2(b)

    torch.manual_seed(0)
    edge = to_edge(torch.export.export(Branches().eval(), (torch.randn(256, 64),)))
    return edge.to_executorch(ExecutorchBackendConfig()).buffer


write_built_program(sys.argv[1], __file__, build)
