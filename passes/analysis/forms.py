"""Which form a function is in: value-semantic kernel calls, or memory ops."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from memplan.dialect.ops import AllocStorageOp
from memplan.passes.analysis.symbols import SymbolCache


def value_semantic_functions(module: ModuleOp) -> list[func.FuncOp]:
    """Functions that call kernel declarations on tensors and allocate no
    storage: the input form of ``manifest-alloc``, on which the passes that
    plan storages (``coalesce``, ``reuse``, ``usmp``) have nothing to do."""
    found: list[func.FuncOp] = []
    symbols = SymbolCache()
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or function.is_declaration:
            continue
        calls_on_tensors = False
        for op in function.walk():
            if isinstance(op, AllocStorageOp):
                break
            if isinstance(op, func.CallOp) and any(
                isinstance(value.type, TensorType) for value in (*op.operands, *op.results)
            ):
                calls_on_tensors |= symbols.declaration(op) is not None
        else:
            if calls_on_tensors:
                found.append(function)
    return found


def value_semantic_message(function: func.FuncOp, pass_name: str) -> str:
    """What ``pass_name`` says of a function it has nothing to do in."""
    first = _BEFORE.get(pass_name, "manifest-alloc and insert-kills")
    return (
        f"{pass_name}: @{function.sym_name.data} calls kernels on tensors but allocates "
        f"no storage: run {first} first (or --plan)"
    )


_BEFORE = {"insert-kills": "manifest-alloc", "verify-plan": "manifest-alloc, insert-kills and usmp"}
"""The passes that make a plan before ``pass_name`` (default: before coalesce and usmp)."""


def warn_value_semantic(module: ModuleOp, pass_name: str) -> None:
    """A warning per function ``pass_name`` leaves alone because it is still
    in value-semantic form (so that `--coalesce --usmp` on such input does
    not silently print it unchanged)."""
    from memplan.dialect.diagnostics import emit_warning

    for function in value_semantic_functions(module):
        emit_warning(function, value_semantic_message(function, pass_name))
