"""Writes a small ExecuTorch program planned by ExecuTorch's own greedy
planner (linear layers with a concatenation and skips) to the path given."""

import sys
import warnings

from built_program import write_built_program


def build() -> bytes:
    warnings.simplefilter("ignore")
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge

    class Blocks(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 256), torch.nn.Linear(256, 128)
            self.c, self.d = torch.nn.Linear(384, 64), torch.nn.Linear(64, 512)
            self.e = torch.nn.Linear(512, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(self.a(x))
            g = torch.relu(self.b(h))
            k = self.c(torch.cat([g, h], 1)) + x
            return self.e(torch.relu(self.d(k))) + k

    torch.manual_seed(0)
    edge = to_edge(torch.export.export(Blocks().eval(), (torch.randn(8, 64),)))
    return edge.to_executorch(ExecutorchBackendConfig()).buffer


write_built_program(sys.argv[1], __file__, build)
