"""Output files written only on success, checked before the work starts.

Every memplan tool writes ``-o FILE`` the same way, and ``plan-report``
its ``output=FILE`` (a library of the standard library alone, so that the
passes and the tools share it):

* ``OutputFile(path)`` creates a temporary file next to ``path`` at once, so
  an unwritable path (a missing directory, a read-only one) is an error
  before any work is done, not after it;
* the tool writes to ``.stream``; ``commit()`` renames the temporary file
  over ``path`` (with the old file's permissions), so a failed or
  interrupted run leaves an existing ``path`` as it was and no temporary
  file behind;
* a path that exists and is not a regular file (``/dev/stdout``, a FIFO) is
  written through directly: there is nothing to replace atomically.

``check_output_path`` is the check without the temporary file, for outputs
written by someone else later (a pass's ``output=`` option).

Imports only the standard library's ``os`` and ``sys``: the console scripts' interrupt
handling (``memplan.tools.launch``) removes ``pending_temporaries()``.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import IO, Any

_pending: set[str] = set()
"""Temporary files created and not yet renamed or removed."""


class OutputFileError(Exception):
    """``cannot write output file 'PATH': REASON`` (the message is ``str()``)."""

    def __init__(self, path: str, reason: str) -> None:
        what = "standard output" if path == "-" else f"output file '{path}'"
        super().__init__(f"cannot write {what}: {reason}")
        self.path = path
        self.reason = reason


def _cannot_write(path: str, reason: str) -> OutputFileError:
    return OutputFileError(path, reason)


def check_output_path(path: str) -> None:
    """Raise ``OutputFileError`` unless ``path`` can be created or replaced:
    its directory exists and is writable, and it is not a directory."""
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise _cannot_write(path, "Is a directory")
    if os.path.exists(target) and not os.path.isfile(target):
        if not os.access(target, os.W_OK):
            raise _cannot_write(path, "Permission denied")
        return
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise _cannot_write(path, "No such file or directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _cannot_write(path, "Permission denied")


def pending_temporaries() -> list[str]:
    """The temporary files an interrupted run must remove."""
    return sorted(_pending)


def remove_pending_temporaries() -> None:
    """Remove every temporary file not yet committed (on an interrupt)."""
    for path in pending_temporaries():
        try:
            os.unlink(path)
        except OSError:
            pass
        _pending.discard(path)


class _GuardedStream:
    """A stream whose I/O errors (a full disk, a failing device) are
    ``OutputFileError``s naming the output, so every tool reports them as
    one line; everything else is the wrapped stream's."""

    def __init__(self, stream: IO[Any], path: str) -> None:
        self._stream = stream
        self._path = path

    def _failed(self, error: OSError) -> OutputFileError:
        return _cannot_write(self._path, error.strerror or str(error))

    def write(self, data: Any) -> int:  # the printers' hot path: no wrapper call
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            raise  # the reader went away: the tools stay quiet
        except OSError as error:
            raise self._failed(error) from None

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._stream, name)
        if not callable(attribute):
            return attribute

        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return attribute(*args, **kwargs)
            except BrokenPipeError:
                raise
            except OSError as error:
                raise self._failed(error) from None

        return guarded


def _mode_for(target: str) -> int:
    """Permissions for the new ``target``: the old file's, else the umask's."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class OutputFile:
    """``path``, written through a temporary file that ``commit()`` renames
    (``None`` or ``-``: stdout, written as it goes).

    Use as a context manager: leaving it without ``commit()`` (an error, an
    interrupt) removes the temporary file::

        with OutputFile(args.output) as output:   # OutputFileError if unwritable
            ... work ...
            output.stream.write(text)
            output.commit()
    """

    def __init__(self, path: str | None, *, binary: bool = False) -> None:
        self.path = path
        self.temporary: str | None = None
        self._close = True
        if path is None or path == "-":
            # stdout: written as the work goes, never closed here.
            stdout = sys.stdout.buffer if binary else sys.stdout
            self.stream: IO[Any] = _GuardedStream(stdout, "-")  # type: ignore[assignment]
            self.target = None
            self._close = False
            return
        self.target = os.path.realpath(path)
        mode = "wb" if binary else "w"
        encoding = None if binary else "utf-8"
        if os.path.isdir(self.target):
            raise _cannot_write(path, "Is a directory")
        if os.path.exists(self.target) and not os.path.isfile(self.target):
            try:
                direct = open(self.target, mode, encoding=encoding)
            except OSError as error:
                raise _cannot_write(path, error.strerror or str(error)) from None
            self.stream = _GuardedStream(direct, path)  # type: ignore[assignment]
            return
        directory, name = os.path.split(self.target)
        descriptor = -1
        for attempt in range(1000):
            temporary = os.path.join(directory, f".{name}.{os.getpid()}.{attempt}.tmp")
            # Registered before it exists: an interrupt from here on removes it.
            _pending.add(temporary)
            try:
                descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                _pending.discard(temporary)
                continue
            except OSError as error:
                _pending.discard(temporary)
                reason = error.strerror or str(error)
                if os.path.isdir(directory):
                    # The folder exists (e.g. /proc): say what failed in it.
                    reason = f"cannot create a file in '{directory}' ({reason})"
                raise _cannot_write(path, reason) from None
            self.temporary = temporary
            break
        else:
            raise _cannot_write(path, "no free temporary name beside it")
        self.stream = _GuardedStream(  # type: ignore[assignment]
            os.fdopen(descriptor, mode, encoding=encoding), path
        )

    def _finish(self) -> None:
        if self._close:
            self.stream.close()
        else:
            self.stream.flush()

    def commit(self) -> None:
        """Close the stream and put the written file in place
        (``OutputFileError`` when that fails: the old file stays)."""
        self._finish()
        if self.temporary is None or self.target is None:
            return
        try:
            os.chmod(self.temporary, _mode_for(self.target))
            os.replace(self.temporary, self.target)
        except OSError as error:
            self.discard()
            raise _cannot_write(self.path or "-", error.strerror or str(error)) from None
        _pending.discard(self.temporary)
        self.temporary = None

    def discard(self) -> None:
        """Close the stream and remove the temporary file (``path`` untouched)."""
        if self._close:
            try:
                self.stream.close()
            except OutputFileError:
                pass  # nothing of it is kept
        if self.temporary is None:
            return
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass
        _pending.discard(self.temporary)
        self.temporary = None

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.temporary is not None:
            self.discard()
        elif self._close:
            self.stream.close()
