"""Reading a built ExecuTorch program (``.pte``) with ExecuTorch's own
deserializer, and what its operators write (their ATen schemas)."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from memplan.tools.frontends.protocol import FrontendError


class PteImportError(FrontendError):
    """A ``.pte`` memplan cannot read or import (one line)."""


@dataclass(frozen=True)
class ExecutorchSerializer:
    """The parts of ExecuTorch that read and write a ``.pte``."""

    schema: Any
    """``executorch.exir.schema``: the flatbuffer's classes."""
    tensor: Any
    """``executorch.exir.tensor``: its byte-size rules."""
    deserialize_pte_binary: Callable[[bytes], Any]
    serialize_pte_binary: Callable[..., Any]


# The modules that read and write a `.pte`: plain Python over `flatbuffers`
# (and torch's dtypes), inside the `executorch.exir` package.
_SERIALIZER_MODULES = ("executorch.exir._serialize._program", "executorch.exir.tensor")
_PACKAGE = "executorch.exir"


@cache
def executorch_serializer() -> ExecutorchSerializer:
    """ExecuTorch's ``.pte`` reader and writer; ``PteImportError`` without ExecuTorch.

    ``executorch.exir``'s ``__init__`` loads the whole export pipeline
    (torch.export, the edge dialect's operator tables): about 7 of the 10 s
    a ``memplan-import`` of a ``.pte`` took, none of it needed to read one.
    Unless the process has loaded the package already, the serializer runs
    beneath a stand-in for it (``_BarePackage``).
    """
    # torch and ExecuTorch log and warn about their own internals at import:
    # not the user's concern (and not this tool's output).
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if _PACKAGE in sys.modules:
                program, tensor, schema = (
                    importlib.import_module(name)
                    for name in (*_SERIALIZER_MODULES, "executorch.exir.schema")
                )
                return ExecutorchSerializer(
                    schema, tensor, program.deserialize_pte_binary, program.serialize_pte_binary
                )
            bare = _BarePackage()
            with bare.active():
                program, tensor, schema = (
                    importlib.import_module(name)
                    for name in (*_SERIALIZER_MODULES, "executorch.exir.schema")
                )
    except ImportError:
        raise PteImportError(
            "reading a .pte needs ExecuTorch: pip install 'memplan[executorch]'"
        ) from None
    finally:
        logging.disable(logging.NOTSET)
    return ExecutorchSerializer(
        schema,
        tensor,
        bare.wrap(program.deserialize_pte_binary),
        bare.wrap(program.serialize_pte_binary),
    )


def _beneath(name: str) -> bool:
    return name == _PACKAGE or name.startswith(_PACKAGE + ".")


class _BarePackage:
    """A module of no code standing in for ``executorch.exir``, and the
    modules imported beneath it: in ``sys.modules`` only while the
    serializer is imported or runs (its flatbuffer classes import lazily),
    so that any other ``import executorch.exir`` in the process gets the
    real package, whole. The serializer keeps its own copies of the modules."""

    def __init__(self) -> None:
        spec = importlib.util.find_spec(_PACKAGE)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(_PACKAGE)
        package = types.ModuleType(_PACKAGE)
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        self._modules: dict[str, types.ModuleType] = {_PACKAGE: package}

    @contextmanager
    def active(self) -> Iterator[None]:
        """Within the block, ``sys.modules`` holds these modules under the
        package's names (and none of the real package's)."""
        others = {name: sys.modules.pop(name) for name in [n for n in sys.modules if _beneath(n)]}
        sys.modules.update(self._modules)
        try:
            yield
        finally:
            self._modules = {
                name: sys.modules.pop(name) for name in [n for n in sys.modules if _beneath(n)]
            }
            sys.modules.update(others)

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` run within ``active``."""

        def run(*args: Any, **kwargs: Any) -> Any:
            with self.active():
                return function(*args, **kwargs)

        return run


def executorch_schema() -> Any:
    """``executorch.exir.schema`` (the flatbuffer's classes); ``PteImportError``
    without ExecuTorch."""
    return executorch_serializer().schema


def load_pte(data: bytes, label: str) -> Any:
    """ExecuTorch's ``PTEFile`` of ``data`` (a ``.pte`` file's bytes): its
    ``program`` (a ``schema.Program``), and what ``serialize_pte_binary``
    writes back."""
    # The flatbuffer's file identifier: "ET" and a two-digit schema version.
    if len(data) < 8 or data[4:6] != b"ET" or not data[6:8].isdigit():
        raise PteImportError(f"{label} is not an ExecuTorch program (no 'ETnn' file identifier)")
    deserialize_pte_binary = executorch_serializer().deserialize_pte_binary
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


def operator_overload(operator: Any) -> Any | None:
    """torch's ``OpOverload`` of a program's ``schema.Operator`` (its
    ``_schema`` and ``tags``), or None when torch has no such operator here."""
    import torch

    namespace, _, name = str(operator.name).partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        overload = getattr(packet, operator.overload or "default")
        overload._schema  # noqa: B018 - a packet without this overload raises here
    except (AttributeError, RuntimeError):
        return None
    return overload


def operator_writes(plan: Any) -> list[list[bool]]:
    """Per operator of ``plan``: which of a call's arguments it writes (its
    schema's arguments, then its returns, as a ``KernelCall`` lists them)."""
    flags: list[list[bool]] = []
    for operator in plan.operators:
        overload = operator_overload(operator)
        if overload is None:
            raise PteImportError(
                f"method '{plan.name}': operator {operator.name}.{operator.overload} has no "
                "schema here, so which arguments it writes is unknown"
            )
        schema = overload._schema
        flags.append(
            [
                bool(a.alias_info is not None and a.alias_info.is_write)
                for a in [*schema.arguments, *schema.returns]
            ]
        )
    return flags
