"""The console scripts' entry points: interrupts handled first, then the tool.

Each ``memplan-*`` command starts here rather than in its tool's module, so
that Ctrl-C (SIGINT), SIGTERM or SIGHUP at any moment, also while the tool's
modules load (xDSL, NumPy: hundreds of milliseconds), ends the same way:

* one line on stderr, ``<tool>: interrupted``, and no traceback;
* exit status 128 + the signal's number, as the shell reports a command
  killed by it (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP);
* ``-o FILE`` left as it was and no temporary file left behind
  (``memplan.tools.output_file`` registers each one; they are removed here).

The first signal makes the process ignore the others, so that the cleanup
is not itself interrupted. A signal a parent told the process to ignore
(``nohup``, a background job's SIGINT) stays ignored. Only the interpreter's
own start-up, before this module runs (a few tens of milliseconds), is not
covered.

This module imports only the standard library's ``os``, ``signal`` and
``sys``; the tool is imported after the handlers are in place. Every
tool's ``--help`` and ``--version`` load neither NumPy nor, except in
``memplan-opt`` (whose options are xdsl-opt's), xDSL.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from importlib import import_module
from types import FrameType

from memplan.tools.output_file import remove_pending_temporaries

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt raised for ``signum`` (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    for number in SIGNALS:
        if signal.getsignal(number) is _on_signal:
            signal.signal(number, signal.SIG_IGN)
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into ``Interrupted`` (unless ignored)."""
    for number in SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _on_signal)


def interrupted(prog: str, error: KeyboardInterrupt) -> int:
    """Clean up after an interrupt, print ``<prog>: interrupted``; the exit status."""
    remove_pending_temporaries()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # a closed terminal (SIGHUP) or pipe
    try:
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return 128 + (error.signum if isinstance(error, Interrupted) else signal.SIGINT)


def run(prog: str, main: Callable[[], int] | str, command_line: str | None = None) -> int:
    """Run a tool's ``main`` (or import the module named ``main`` and run its
    ``main``) with interrupts handled; return the exit status.

    ``command_line`` names a light module whose ``build_parser()`` reads the
    tool's command line: it runs before the tool is imported, so that
    ``--help``, ``--version`` and usage errors do not wait for the tool's
    modules to load (``main`` reads the command line again)."""
    install_signal_handlers()
    try:
        if command_line is not None:
            import_module(command_line).build_parser().parse_args()
        entry = import_module(main).main if isinstance(main, str) else main
        return entry()
    except KeyboardInterrupt as error:
        return interrupted(prog, error)


def memplan_opt() -> int:
    """The ``memplan-opt`` command."""
    return run("memplan-opt", "memplan.tools.memplan_opt")


def memplan_import_onnx() -> int:
    """The ``memplan-import-onnx`` command."""
    return run("memplan-import-onnx", "memplan.tools.memplan_import_onnx")


def memplan_import_tflite() -> int:
    """The ``memplan-import-tflite`` command."""
    return run("memplan-import-tflite", "memplan.tools.memplan_import_tflite")


def memplan_export_tflite() -> int:
    """The ``memplan-export-tflite`` command."""
    return run(
        "memplan-export-tflite",
        "memplan.tools.memplan_export_tflite",
        "memplan.tools.memplan_export_tflite",
    )


def memplan_run() -> int:
    """The ``memplan-run`` command."""
    return run("memplan-run", "memplan.tools.memplan_run", "memplan.tools.run_arguments")


def memplan_solve() -> int:
    """The ``memplan-solve`` command."""
    return run("memplan-solve", "memplan.tools.memplan_solve")
