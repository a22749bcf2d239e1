"""Helpers shared by the pytest suite: build a context with every dialect,
parse, run passes as ``memplan-opt`` does, print."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from memplan.dialect.context import memplan_context
from memplan.passes import get_all_passes


def parse_module(text: str, *, verify: bool = False) -> ModuleOp:
    module = Parser(memplan_context(), text).parse_module()
    if verify:
        module.verify()
    return module


def run_passes(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply the pipeline ``spec`` through the registry, verifying after each
    pass as ``memplan-opt`` does (an empty ``spec`` only verifies)."""
    if spec:
        PassPipeline.parse_spec(
            get_all_passes(), spec, callback=lambda _p, op, _n: op.verify()
        ).apply(memplan_context(), module)
    module.verify()
    return module


def print_module(module: ModuleOp, *, generic: bool = False) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


EXAMPLE_SCALE = 10 if os.environ.get("MEMPLAN_HYPOTHESIS_PROFILE") == "thorough" else 1
"""How many more examples each property test draws under the thorough profile."""


def examples(count: int) -> int:
    """``count`` hypothesis examples (the CI size), scaled by the profile."""
    return count * EXAMPLE_SCALE


def run_main(
    main: Callable[..., int], *argv: str | Path, **options: str
) -> subprocess.CompletedProcess[str]:
    """A tool's ``main`` run in this process on ``argv`` (and the keyword
    ``options`` its command passes, as in ``memplan.tools.launch``): its exit
    status and what it printed, as ``subprocess.run`` reports a command.

    For tests of what a tool computes; a process start costs about 0.3 s,
    over 1 s for a tool that loads torch. What the process adds (signals,
    the exit status of a usage error, output to a closed pipe) is tested
    through the commands themselves."""
    args = [str(arg) for arg in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args, **options)
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def executorch_exir() -> Any:
    """``executorch.exir`` (with its memory planning and passes), loaded by
    the first test that needs it: its export pipeline takes seconds to
    load, which collecting a test file on every pytest worker would cost."""
    with warnings.catch_warnings():  # ExecuTorch warns about itself at import
        warnings.simplefilter("ignore")
        import executorch.exir
        import executorch.exir.memory_planning
        import executorch.exir.passes

    return executorch.exir
