"""Kernels memplan gives ONNX's reference evaluator (``onnx.reference``, onnx
1.23) where its own are wrong or missing; every evaluator memplan builds
(constant folding, memplan-run's kernels and its whole-model reference)
takes them as ``new_ops``.

* ``GlobalMaxPool``: onnx's reduces axes ``(n - 2, n - 1)`` of an
  ``n``-d input, right only for 4-d ones: a ``[1, 512, 1]`` result of a
  ``[1, 512, 256]`` input comes out ``[1, 1]`` (magika's model), a 5-d
  input gains a dim. Here: the max over every spatial axis (2 on), kept as
  1s, as ONNX defines it.
* ``GlobalLpPool``: onnx has none. Here: ``(sum |x|^p)^(1/p)`` over every
  spatial axis (``p`` default 2), in the input's dtype.

``GlobalAveragePool`` is right in onnx (it reduces axes 2 on).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.op_run import OpRun


class GlobalMaxPool(OpRun):
    def _run(self, x: Any) -> tuple[np.ndarray]:  # type: ignore[override]
        array = np.asarray(x)
        return (array.max(axis=tuple(range(2, array.ndim)), keepdims=True),)


class GlobalLpPool(OpRun):
    def _run(self, x: Any, p: int = 2) -> tuple[np.ndarray]:  # type: ignore[override]
        array = np.asarray(x)
        total = np.power(np.absolute(array), p).sum(axis=tuple(range(2, array.ndim)), keepdims=True)
        return (np.power(total, 1.0 / p).astype(array.dtype),)


REFERENCE_OPS: list[type[OpRun]] = [GlobalMaxPool, GlobalLpPool]
"""The kernels above, for ``ReferenceEvaluator(model, new_ops=REFERENCE_OPS)``."""
