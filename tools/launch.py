"""The console scripts' entry points: interrupts handled first, then the tool.

Each ``memplan-*`` command starts here rather than in its tool's module, so
that Ctrl-C (SIGINT), SIGTERM or SIGHUP at any moment, also while the tool's
modules load (xDSL, NumPy: hundreds of milliseconds), ends the same way:

* one line on stderr, ``<tool>: interrupted``, and no traceback;
* exit status 128 + the signal's number, as the shell reports a command
  killed by it (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP);
* ``-o FILE`` left as it was and no temporary file left behind
  (``memplan.passes.output_file`` registers each one; they are removed here).
  The output is put in place by one rename at the end of the run: a signal
  that arrives after it still ends the tool as interrupted, with the new
  output complete in place (never a part of it).

A signal a parent told the process to ignore (``nohup``, a background
job's SIGINT) stays ignored. The first signal decides the exit status; the
others are ignored once the cleanup has started, so that it is not itself
interrupted. Until then the interrupt is raised again every half second
(SIGALRM): C code that runs Python code (a ``__hash__`` under a dict
lookup, an attribute lookup under ``PyObject_HasAttr``) may clear the
exception the handler raised, and the run must not go on as if nothing
had happened. An interrupt raised where Python cannot propagate it (a
``__del__``, a weakref callback, a garbage-collector callback) is not
printed as "Exception ignored in ...": the re-delivery raises it again
where it can propagate. Only the interpreter's
own start-up, before this module runs (a few tens of milliseconds), is not
covered.

The cyclic garbage collector runs less often than CPython's default (every
100,000 net allocations instead of 700): the tools build IR of hundreds of
thousands of objects, and at the default a tenth to a fifth of a
10,000-op ``memplan-opt --plan`` went to collections that found little.

This module imports only the standard library's ``gc``, ``signal`` and
``sys``; the tool is imported after the handlers are in place. Every
tool's ``--help`` and ``--version`` load neither NumPy nor, except in
``memplan-opt`` (whose options are xdsl-opt's), xDSL.
"""

from __future__ import annotations

import errno
import gc
import os
import signal
import sys
from collections.abc import Callable
from importlib import import_module
from types import FrameType

from memplan.passes.output_file import remove_pending_temporaries

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

GC_THRESHOLDS = (100_000, 50, 100)
"""``gc.set_threshold`` for every tool (see the module's docstring)."""
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""Write errors of a full or failing device: reported as one line, not a traceback."""


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt raised for ``signum`` (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


REDELIVERY_SECONDS = 0.5
"""How often an interrupt not yet handled is raised again."""

_first_signal: int | None = None
"""The signal that interrupted the run, once one has."""


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    global _first_signal
    if _first_signal is None:
        _first_signal = signum
        if hasattr(signal, "setitimer"):
            signal.signal(signal.SIGALRM, _on_redelivery)
            signal.setitimer(signal.ITIMER_REAL, REDELIVERY_SECONDS, REDELIVERY_SECONDS)
    if not _handling_interrupt():
        raise Interrupted(_first_signal)


def _on_redelivery(_signum: int, _frame: FrameType | None) -> None:
    if _first_signal is not None and not _handling_interrupt():
        raise Interrupted(_first_signal)


def _handling_interrupt() -> bool:
    """Whether an ``except`` clause is handling the interrupt already (raising
    another there would escape the cleanup)."""
    return isinstance(sys.exc_info()[1], KeyboardInterrupt)


def _stop_signals() -> None:
    """Ignore every later signal and stop the re-delivery (the cleanup runs)."""
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    for number in (*SIGNALS, signal.SIGALRM):
        if signal.getsignal(number) in (_on_signal, _on_redelivery):
            signal.signal(number, signal.SIG_IGN)


def _drop_unraisable_interrupt(unraisable: sys.UnraisableHookArgs) -> None:
    """``sys.unraisablehook``: an interrupt raised in a ``__del__`` (or any
    place that cannot propagate it) is raised again by the re-delivery, so
    it is not reported; anything else is, as by default."""
    if _first_signal is not None and isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def install_signal_handlers() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into ``Interrupted`` (unless ignored)."""
    for number in SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _on_signal)
    sys.unraisablehook = _drop_unraisable_interrupt


def interrupted(prog: str, error: KeyboardInterrupt) -> int:
    """Clean up after an interrupt, print ``<prog>: interrupted``; the exit status."""
    _stop_signals()
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


def run(
    prog: str, main: Callable[..., int] | str, command_line: str | None = None, /, **options: str
) -> int:
    """Run a tool's ``main`` (or import the module named ``main`` and run its
    ``main``) with interrupts handled, passing it ``options`` (a command
    that is another's for one format or target: its ``prog`` and key);
    return the exit status.

    ``command_line`` names a light module whose ``build_parser()`` reads the
    tool's command line: it runs before the tool is imported, so that
    ``--help``, ``--version`` and usage errors do not wait for the tool's
    modules to load (``main`` reads the command line again)."""
    install_signal_handlers()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        if command_line is not None:
            import_module(command_line).build_parser().parse_args()
        entry = import_module(main).main if isinstance(main, str) else main
        status = entry(**options)
        sys.stdout.flush()  # here, not at exit: a full disk is an error of the run
        return status
    except KeyboardInterrupt as error:
        return interrupted(prog, error)
    except BrokenPipeError:
        # The reader went away (`memplan-import m.onnx | head`): stay quiet,
        # and let nothing flush into the closed pipe at exit.
        sys.stdout = open(os.devnull, "w")
        return 1
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            raise
        # Standard output could not take what the tool printed (`> /dev/full`).
        sys.stdout = open(os.devnull, "w")
        print(f"{prog}: error: cannot write standard output: {error.strerror}", file=sys.stderr)
        return 1


def memplan_opt() -> int:
    """The ``memplan-opt`` command."""
    return run("memplan-opt", "memplan.tools.memplan_opt")


def memplan_import() -> int:
    """The ``memplan-import`` command."""
    return run("memplan-import", "memplan.tools.memplan_import")


def memplan_import_onnx() -> int:
    """The ``memplan-import-onnx`` command: `memplan-import` for ONNX models."""
    prog = "memplan-import-onnx"
    return run(prog, "memplan.tools.memplan_import", prog=prog, format_key="onnx")


def memplan_import_tflite() -> int:
    """The ``memplan-import-tflite`` command: `memplan-import` for TFLite models."""
    prog = "memplan-import-tflite"
    return run(prog, "memplan.tools.memplan_import", prog=prog, format_key="tflite")


def memplan_export() -> int:
    """The ``memplan-export`` command."""
    return run("memplan-export", "memplan.tools.memplan_export")


def memplan_export_tflite() -> int:
    """The ``memplan-export-tflite`` command: `memplan-export tflm`."""
    prog = "memplan-export-tflite"
    return run(prog, "memplan.tools.memplan_export", prog=prog, target="tflm")


def memplan_export_pte() -> int:
    """The ``memplan-export-pte`` command: `memplan-export pte`."""
    prog = "memplan-export-pte"
    return run(prog, "memplan.tools.memplan_export", prog=prog, target="pte")


def memplan_run() -> int:
    """The ``memplan-run`` command."""
    return run("memplan-run", "memplan.tools.memplan_run", "memplan.tools.run_arguments")


def memplan_solve() -> int:
    """The ``memplan-solve`` command."""
    return run("memplan-solve", "memplan.tools.memplan_solve")
