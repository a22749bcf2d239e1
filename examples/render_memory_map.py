"""Render the memory map of a real model: ONNX -> memplan -> SVG -> PNG.

Usage: python examples/render_memory_map.py [--model densenet121|FILE.onnx]
       [--out-dir docs] [--no-png]

Runs the whole user pipeline through the command-line tools:

1. ``memplan-import-onnx`` imports ``light_<model>.onnx`` from the ``onnx``
   package's test data (the "light" models: real architectures whose weights
   are ``ConstantOfShape`` splats, so they import in seconds);
2. ``memplan-opt --manifest-alloc --insert-kills --usmp
   --plan-report='format=svg output="..."'`` plans it and writes the map;
   a second ``--plan-report`` prints the text table (used vs. lower bound);
3. the SVG is rendered to PNG with CairoSVG (``pip install cairosvg``, or
   ``rsvg-convert`` from librsvg when it is on PATH). The PNG is only for
   places that do not show SVG; neither tool is a memplan dependency.

Writes ``<out-dir>/memory-map-<model>.svg`` and ``.png``; the README shows
the committed ones for densenet121.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def light_model(name: str) -> Path:
    """``name`` if it is an ``.onnx`` file, else ``light_<name>.onnx`` of the ``onnx`` package."""
    if name.endswith(".onnx"):
        return Path(name).resolve()
    import onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"
    if not path.exists():
        available = sorted(p.stem.removeprefix("light_") for p in path.parent.glob("light_*.onnx"))
        raise SystemExit(f"no light model '{name}'; available: {', '.join(available)}")
    return path


def tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tools.<module> ARGS`` from the repository (as lit does)."""
    result = subprocess.run(
        [sys.executable, "-m", f"memplan.tools.{module}", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"{module} failed:\n{result.stderr}")
    return result


def render_png(svg: Path, png: Path) -> str:
    """Render ``svg`` to ``png``; returns the renderer used."""
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError:
        converter = shutil.which("rsvg-convert")
        if converter is None:
            raise SystemExit(
                "no SVG renderer: pip install cairosvg (or install librsvg's rsvg-convert)"
            ) from None
        subprocess.run([converter, "-o", str(png), str(svg)], check=True)
        return "rsvg-convert"
    cairosvg.svg2png(url=str(svg), write_to=str(png))
    return "cairosvg"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--model", default="densenet121", help="light ONNX model name, or an .onnx file"
    )
    parser.add_argument("--out-dir", type=Path, default=REPO / "docs")
    parser.add_argument("--no-png", action="store_true", help="write the SVG only")
    args = parser.parse_args(argv)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    model = light_model(args.model)
    svg = (args.out_dir / f"memory-map-{model.stem.removeprefix('light_')}.svg").resolve()
    with tempfile.TemporaryDirectory() as scratch:
        imported = Path(scratch) / "imported.mlir"
        tool("memplan_import", str(model), "-o", str(imported))
        result = tool(
            "memplan_opt",
            str(imported),
            "--manifest-alloc",
            "--insert-kills",
            "--usmp",
            f'--plan-report=format=svg output="{svg}"',
            "--plan-report",
            "-o",
            str(Path(scratch) / "planned.mlir"),
        )
    print(result.stderr, end="")
    print(
        f"wrote {svg.relative_to(REPO) if svg.is_relative_to(REPO) else svg} "
        f"({svg.stat().st_size} bytes)"
    )
    if not args.no_png:
        png = svg.with_suffix(".png")
        renderer = render_png(svg, png)
        print(
            f"wrote {png.relative_to(REPO) if png.is_relative_to(REPO) else png} "
            f"({png.stat().st_size} bytes, {renderer})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
