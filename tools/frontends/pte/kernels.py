"""ExecuTorch's kernels as memplan reads them, in the standard library
only, so the memory planning hook (``memplan.tools.exporters.executorch.hook``,
which loads neither xDSL nor NumPy) and the front end share one list."""

from __future__ import annotations

ELEMENTWISE_KERNELS = frozenset(
    {
        *(
            (f"aten::{name}", "out")
            for name in (
                "abs", "add", "clamp", "div", "exp", "gelu", "hardsigmoid", "hardswish",
                "hardtanh", "leaky_relu", "mul", "neg", "relu", "rsqrt", "sigmoid", "silu",
                "sqrt", "sub", "tanh",
            )
        ),
        ("aten::pow", "Tensor_Scalar_out"),
    }
)  # fmt: skip
"""ExecuTorch's portable kernels (operator name, overload) that compute each
output element from the input elements at the same index (broadcast inputs
aside): an input of the output's shape may hold the output. Checked by
running every benchmark model bit-identical with and without it
(``benchmarks/executorch_models.py``)."""
