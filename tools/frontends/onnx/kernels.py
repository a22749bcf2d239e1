"""The kernels `memplan-run` executes ONNX-imported modules with: each kernel
declaration becomes a one-node ONNX model run by ONNX's reference evaluator,
or, for an operator it lacks (ONNX Runtime's `com.microsoft` contrib ops),
by ONNX Runtime when `onnxruntime` is installed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Attribute

from memplan.dialect.interpreter import Kernel, kernel_of_shape_function, shape_function_kernel
from memplan.tools.frontends.onnx.importer import (
    ONNX_ATTR_PREFIX,
    RESERVED_ONNX_KEYS,
    decode_attribute,
    int_list,
)
from memplan.tools.frontends.onnx.model import (
    CompiledNode,
    evaluate,
    one_node_model,
    reference_evaluator,
)


@dataclass
class OnnxKernelResolver:
    """Runs kernel declarations made by the importer with ONNX's reference evaluator.

    A declaration qualifies when it carries `memory.onnx.op_type`. A call
    builds (once per op, attributes, operand dtypes and shapes, then cached)
    a one-node model, evaluates it, and copies the results into the call's
    outputs after checking their shapes and dtypes. The declaration may be
    value-semantic or destination-passing: inputs and outputs come from the
    call site.

    The shape function of such a kernel (the declaration its
    `memory.shape_fn` names, in the same module) qualifies too: it evaluates
    the node on its operands and writes the results' dynamic dims, in result
    then dim order, into its 0-d outputs. The reference evaluator has no
    shape-only path, and evaluating the node is exact for every op.
    """

    cache: dict[tuple[Any, ...], CompiledNode] = field(default_factory=dict)

    def __call__(self, declaration: func.FuncOp) -> Kernel | None:
        if isinstance(declaration.attributes.get(ONNX_ATTR_PREFIX + "op_type"), StringAttr):
            return self._kernel(declaration)
        kernel = kernel_of_shape_function(declaration)
        if kernel is None or not isinstance(
            kernel.attributes.get(ONNX_ATTR_PREFIX + "op_type"), StringAttr
        ):
            return None
        operand_count = len(declaration.function_type.inputs.data)
        result_count = len(kernel.function_type.outputs.data) or (
            len(kernel.function_type.inputs.data) - operand_count
        )
        run = self._evaluator(kernel)
        return shape_function_kernel(
            declaration, kernel, lambda ins: [np.shape(r) for r in run(ins, result_count)]
        )

    def _kernel(self, declaration: func.FuncOp) -> Kernel:
        name = declaration.sym_name.data
        op_type = declaration.attributes[ONNX_ATTR_PREFIX + "op_type"]
        run = self._evaluator(declaration)

        def kernel(
            ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Attribute]
        ) -> None:
            results = run(ins, len(outs))
            for index, (out, result) in enumerate(zip(outs, results)):
                result = np.asarray(result)
                if result.shape != out.shape or result.dtype != out.dtype:
                    raise ValueError(
                        f"kernel @{name} ({op_type}) produced {result.dtype}"
                        f"{list(result.shape)} for output {index}, which is "
                        f"{out.dtype}{list(out.shape)}"
                    )
                np.copyto(out, result)

        return kernel

    def _evaluator(
        self, declaration: func.FuncOp
    ) -> Callable[[Sequence[Any], int], list[np.ndarray]]:
        """``run(ins, count)``: the first ``count`` present outputs of the
        node ``declaration`` describes, evaluated on ``ins``."""
        attrs = declaration.attributes
        op_type = attrs[ONNX_ATTR_PREFIX + "op_type"]
        assert isinstance(op_type, StringAttr)
        domain_attr = attrs.get(ONNX_ATTR_PREFIX + "domain")
        opset_attr = attrs.get(ONNX_ATTR_PREFIX + "opset")
        domain = domain_attr.data if isinstance(domain_attr, StringAttr) else ""
        opset = opset_attr.value.data if isinstance(opset_attr, IntegerAttr) else 13
        onnx_attributes = [
            decode_attribute(key.removeprefix(ONNX_ATTR_PREFIX), value)
            for key, value in sorted(attrs.items())
            if key.startswith(ONNX_ATTR_PREFIX)
            and key.removeprefix(ONNX_ATTR_PREFIX) not in RESERVED_ONNX_KEYS
        ]
        input_slots = int_list(attrs.get(ONNX_ATTR_PREFIX + "input_slots"))
        output_slots = int_list(attrs.get(ONNX_ATTR_PREFIX + "output_slots"))
        signature = (
            op_type.data,
            domain,
            opset,
            tuple(a.SerializeToString() for a in onnx_attributes),
        )

        def compiled(arrays: Sequence[np.ndarray], count: int) -> tuple[CompiledNode, list[int]]:
            slots = input_slots if input_slots is not None else list(range(len(arrays)))
            specs: list[tuple[np.dtype[Any], tuple[int, ...]] | None]
            specs = [None] * (max(slots, default=-1) + 1)
            for slot, array in zip(slots, arrays):
                specs[slot] = (array.dtype, array.shape)
            out_slots = output_slots if output_slots is not None else list(range(count))
            key = (*signature, tuple(specs), tuple(out_slots))
            if key not in self.cache:
                try:
                    model, in_names, out_names = one_node_model(
                        op_type.data,
                        domain,
                        opset,
                        onnx_attributes,
                        specs,
                        max(out_slots, default=-1) + 1,
                    )
                    evaluator = reference_evaluator(model)
                except Exception as error:  # noqa: BLE001 - onnx.reference's own reasons
                    # An op onnx.reference does not implement (ONNX Runtime's
                    # contrib ops): ONNX Runtime's kernel when it is installed.
                    name = f"{domain}.{op_type.data}" if domain else op_type.data
                    first = (str(error).splitlines() or [type(error).__name__])[0]
                    evaluator = onnxruntime_evaluator(model, f"ONNX operator {name}", first)
                self.cache[key] = CompiledNode(evaluator, in_names, out_names)
            return self.cache[key], out_slots

        def run(ins: Sequence[Any], count: int) -> list[np.ndarray]:
            arrays = [np.asarray(x) for x in ins]
            node, out_slots = compiled(arrays, count)
            feeds = {n: np.asarray(a, order="C") for n, a in zip(node.input_names, arrays)}
            results = evaluate(node.evaluator, [node.output_names[s] for s in out_slots], feeds)
            return [np.asarray(r) for r in results]

        return run


def onnxruntime_evaluator(model: Any, what: str, reference_problem: str) -> Any:
    """ONNX Runtime's session of ``model`` (its ``run(names, feeds)`` is the
    reference evaluator's), for ``what`` (an operator, the model) that
    onnx.reference cannot run; ``NotImplementedError`` naming both reasons
    when ONNX Runtime cannot either."""
    try:
        import onnxruntime
    except ImportError:
        raise NotImplementedError(
            f"memplan-run has no kernel for {what} (onnx.reference: "
            f"{reference_problem}); install onnxruntime to run it with ONNX Runtime's "
            "kernel, or give one with --kernels FILE.py"
        ) from None
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are not the run's output
    try:
        return onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # noqa: BLE001 - ONNX Runtime's own reasons
        first = (str(error).splitlines() or [type(error).__name__])[0]
        raise NotImplementedError(
            f"memplan-run has no kernel for {what} (onnx.reference: "
            f"{reference_problem}; onnxruntime: {first}); give one with --kernels FILE.py"
        ) from None
