"""Writes a test program's ``.pte`` built once per lit run: building one
loads ExecuTorch's export pipeline (about 5 s), and several test files
read the same program. The build is kept under this folder's ``Output/``,
named by the script's text and the installed torch and ExecuTorch, so a
changed script or package builds it again; a lock lets one test build it
while the others wait."""

import fcntl
import hashlib
import shutil
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path


def write_built_program(out: str, script: str, build: Callable[[], bytes]) -> None:
    """Copies to ``out`` the program ``build()`` returns for ``script``."""
    source = Path(script)
    versions = f"torch {version('torch')} executorch {version('executorch')}"
    key = hashlib.sha256(source.read_bytes() + versions.encode()).hexdigest()[:16]
    cache = source.parent.parent / "Output" / "built-programs"
    cache.mkdir(parents=True, exist_ok=True)
    built = cache / f"{source.stem}-{key}.pte"
    with open(cache / f"{built.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            partial = built.with_suffix(".partial")
            partial.write_bytes(build())
            partial.replace(built)
    shutil.copyfile(built, out)
