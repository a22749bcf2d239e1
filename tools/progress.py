"""A one-line status on a terminal's stderr for work that takes long.

``Progress`` shows the running step when work takes more than
``PROGRESS_DELAY`` seconds; it is silent when stderr is not a terminal.
Every tool shows its stages with it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

PROGRESS_DELAY = float(os.environ.get("MEMPLAN_PROGRESS_DELAY", "2.0"))
"""Seconds of work before progress shows (``MEMPLAN_PROGRESS_DELAY`` sets it)."""


class Progress:
    """A one-line status on a terminal's stderr for work that takes long:
    ``memplan-opt: pass 3/4, usmp, 4.2 s``. Shown only when ``stream`` is a
    terminal and the work has run ``delay`` seconds; erased when done."""

    def __init__(
        self,
        prog: str,
        stream: TextIO | None = None,
        delay: float | None = None,
        enabled: bool | None = None,
    ):
        self.prog = prog
        self._enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.delay = PROGRESS_DELAY if delay is None else delay
        self.step = "starting"
        self.start = time.monotonic()
        self._shown = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """As asked, else whether ``stream`` is a terminal."""
        if self._enabled is not None:
            return self._enabled
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def set(self, step: str) -> None:
        """Name the step now running (shown at once once the delay is over)."""
        self.step = step
        if self._thread is not None and time.monotonic() - self.start >= self.delay:
            self._render()

    def _render(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            elapsed = time.monotonic() - self.start
            self.stream.write(f"\r\x1b[K{self.prog}: {self.step}, {elapsed:.1f} s")
            self.stream.flush()
            self._shown = True

    def _run(self) -> None:
        if self._done.wait(self.delay):
            return
        while not self._done.is_set():
            self._render()
            self._done.wait(0.25)

    @contextmanager
    def running(self) -> Iterator[Progress]:
        """Show progress while the body runs (if enabled)."""
        # Fresh state: one Progress serves every chunk of a split input.
        self.start = time.monotonic()
        self._done = threading.Event()
        self._shown = False
        self._thread = None
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        try:
            yield self
        finally:
            with self._lock:
                self._done.set()
            if self._thread is not None:
                self._thread.join()
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
