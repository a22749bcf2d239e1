"""Reading a built ExecuTorch program (``.pte``) with ExecuTorch's own
deserializer, and what its operators write (their ATen schemas)."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from memplan.tools.frontends.protocol import FrontendError


class PteImportError(FrontendError):
    """A ``.pte`` memplan cannot read or import (one line)."""


def executorch_schema() -> Any:
    """``executorch.exir.schema`` (the flatbuffer's classes); ``PteImportError``
    without ExecuTorch."""
    # torch and ExecuTorch log and warn about their own internals at import:
    # not the user's concern (and not this tool's output).
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import executorch.exir._serialize._program  # noqa: F401 - quiet here, used later
            import executorch.exir.schema as schema
    except ImportError:
        raise PteImportError(
            "reading a .pte needs ExecuTorch: pip install 'memplan[executorch]'"
        ) from None
    finally:
        logging.disable(logging.NOTSET)
    return schema


def load_pte(data: bytes, label: str) -> Any:
    """ExecuTorch's ``PTEFile`` of ``data`` (a ``.pte`` file's bytes): its
    ``program`` (a ``schema.Program``), and what ``serialize_pte_binary``
    writes back."""
    executorch_schema()
    from executorch.exir._serialize._program import deserialize_pte_binary

    # The flatbuffer's file identifier: "ET" and a two-digit schema version.
    if len(data) < 8 or data[4:6] != b"ET" or not data[6:8].isdigit():
        raise PteImportError(f"{label} is not an ExecuTorch program (no 'ETnn' file identifier)")
    try:
        return deserialize_pte_binary(data)
    except Exception as error:  # noqa: BLE001 - the flatbuffer reader's own failures
        first = (str(error).splitlines() or [type(error).__name__])[0]
        raise PteImportError(f"{label} is truncated or corrupt ({first})") from None


def straight_line(plan: Any, schema: Any, tool: str) -> list[Any]:
    """The instructions of method ``plan``, when it is one chain without
    delegates or jumps; ``PteImportError`` naming what else it has and that
    ``tool`` (``memplan-import reads``) takes straight-line methods only."""
    name = plan.name
    if plan.delegates:
        raise PteImportError(
            f"method '{name}' has {len(plan.delegates)} delegate(s), whose memory the program "
            f"does not show: {tool} programs without delegates"
        )
    if len(plan.chains) != 1:
        raise PteImportError(f"method '{name}' has {len(plan.chains)} chains; {tool} one")
    instructions = list(plan.chains[0].instructions)
    for position, instruction in enumerate(instructions):
        if isinstance(instruction.instr_args, schema.JumpFalseCall):
            raise PteImportError(
                f"method '{name}' has control flow (a JumpFalseCall at instruction {position}); "
                f"{tool} straight-line methods"
            )
        if isinstance(instruction.instr_args, schema.DelegateCall):
            raise PteImportError(f"method '{name}' calls a delegate at instruction {position}")
    return instructions


def operator_writes(plan: Any) -> list[list[bool]]:
    """Per operator of ``plan``: which of a call's arguments it writes (its
    schema's arguments, then its returns, as a ``KernelCall`` lists them)."""
    import torch

    flags: list[list[bool]] = []
    for operator in plan.operators:
        namespace, _, name = str(operator.name).partition("::")
        try:
            packet = getattr(getattr(torch.ops, namespace), name)
            schema = getattr(packet, operator.overload or "default")._schema
        except (AttributeError, RuntimeError):
            raise PteImportError(
                f"method '{plan.name}': operator {operator.name}.{operator.overload} has no "
                "schema here, so which arguments it writes is unknown"
            ) from None
        flags.append(
            [
                bool(a.alias_info is not None and a.alias_info.is_write)
                for a in [*schema.arguments, *schema.returns]
            ]
        )
    return flags
