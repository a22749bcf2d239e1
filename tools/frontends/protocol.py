"""The interface every model front end implements, and what its methods
share: the options an import takes, a model imported for `memplan-run`,
and the error a front end reports bad input with.

A front end reads a model file, imports it as value-semantic IR (the
`manifest-alloc` input), resolves the kernel declarations it emits to NumPy
kernels, and runs the model in the format's own runtime as `memplan-run`'s
reference. `memplan.tools.frontends.registry` maps file suffixes to front
ends; `memplan-run` and the `memplan-import-*` tools reach a format only
through it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

if TYPE_CHECKING:
    # Only `memplan-run` needs the interpreter: importing a model does not load it.
    from memplan.dialect.interpreter import KernelResolver


class FrontendError(Exception):
    """A model or option a front end cannot take; the message names the
    tensor, node or option (the tools print it as one line)."""


@dataclass(frozen=True)
class ImportOptions:
    """What an import takes besides the model, in every format.
    ``input_shapes`` fixes graph inputs' shapes (``NAME=DIMS``);
    ``upper_bounds`` keeps dynamic dims dynamic, each at most its bound,
    keyed by the name the front end's ``--upper-bound`` syntax gives the
    dim (an ONNX symbol, a TFLite ``INPUT:AXIS``); ``lower_bounds`` raise
    the lower end of some of those dims' ranges from 1. A front end's own
    options are the fields of its subclass (its ``options_type``)."""

    input_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    upper_bounds: Mapping[str, int] = field(default_factory=dict[str, int])
    lower_bounds: Mapping[str, int] = field(default_factory=dict[str, int])


Reference = Callable[[Sequence[np.ndarray]], list[np.ndarray]]
"""The model's outputs for the given ``@main`` arguments, from the format's
own runtime."""


@dataclass
class ImportedModel:
    """A model imported for `memplan-run`: the module, the data of its
    globals, each graph input's dims (a size, or the name of a bounded
    dynamic dim, as ``ImportOptions.upper_bounds`` keys it) and the
    reference run."""

    module: ModuleOp
    globals_data: dict[str, np.ndarray]
    input_dims: list[tuple[str, list[int | str]]]
    reference: Reference


class Frontend(Protocol):
    """One model format (``registry.FrontendEntry`` says how it is found).
    ``tolerance`` is `memplan-run`'s default ``(atol, rtol)`` against the
    reference run; ``options_type`` the ``ImportOptions`` (sub)class its
    methods take (called with its fields as keywords by the Python API)."""

    tolerance: tuple[float, float]
    options_type: Callable[..., ImportOptions]

    def parse_options(self, args: argparse.Namespace) -> ImportOptions:
        """The options of a command line: ``args.input_shape``,
        ``args.upper_bound`` and ``args.lower_bound`` (lists of specs in this
        format's syntax) and
        the format's own options (its ``add_arguments``); ``FrontendError``
        when one is malformed."""
        ...

    def import_module(self, path: str, options: ImportOptions) -> ModuleOp:
        """The model at ``path`` as value-semantic IR (`memplan-import-*`)."""
        ...

    def import_for_run(self, path: str, options: ImportOptions) -> ImportedModel:
        """The model at ``path`` imported for `memplan-run`, with its
        globals' data and its reference run."""
        ...

    def kernel_resolver(self) -> KernelResolver:
        """NumPy kernels for the kernel declarations this front end emits."""
        ...

    def io_names(self, main: func.FuncOp, key: Literal["inputs", "outputs"]) -> list[str] | None:
        """The model's names of ``@main``'s arguments or results, when the
        importer recorded them (``None`` for another format's module)."""
        ...

    def weights(self, path: str, module: ModuleOp, options: ImportOptions) -> dict[str, np.ndarray]:
        """Data of ``module``'s data-less globals from the model at ``path``
        (`memplan-run FILE.mlir --weights-from`)."""
        ...
