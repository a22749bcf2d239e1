"""A front end, an exporter, an offset algorithm and a report format added
from a temporary folder: one package and one registry line each (an entry
point in ``memplan.frontends``, ``memplan.exporters``,
``memplan.algorithms`` or ``memplan.report_formats``), no other file of the
repository. The generic commands (`memplan-import`, `memplan-run`,
`memplan-export`) and the passes (`usmp{algorithm=...}`,
`plan-report{format=...}`) find them and run them as they run the built-in
ones.

The toy format is a text file of elementwise steps on float vectors::

    input x 8
    y = scale x 2.0
    z = add y x
    output z

the toy exporter writes a planned module's storages as ``name offset``
lines, the toy algorithm stacks every buffer above the one before (never
sharing a byte), and the toy report format counts the storages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

TOY_PACKAGE = {
    "__init__.py": '''
        """The toy format's registry entries (light: what the tools read first)."""
        from memplan.tools.exporters.registry import ExporterEntry
        from memplan.tools.frontends.registry import FrontendEntry

        FRONTEND = FrontendEntry("toy", "Toy", (".toy",), "toyfmt.frontend:FRONTEND", "toyfmt.options")
        EXPORTER = ExporterEntry("offsets", "storage offsets as text", "a planned .mlir", "toyfmt.exporter")
        ''',
    "options.py": """
        def add_arguments(group):
            group.add_argument("--scale-by", type=float, default=1.0, help="scale every scale step")
        """,
    "frontend.py": """
        from dataclasses import dataclass

        import numpy as np
        from xdsl.parser import Parser

        from memplan.dialect.context import memplan_context
        from memplan.tools.frontends.protocol import FrontendError, ImportedModel, ImportOptions


        @dataclass(frozen=True)
        class ToyOptions(ImportOptions):
            scale_by: float = 1.0


        def _steps(path):
            lines = [line.split() for line in open(path).read().splitlines() if line.strip()]
            if not lines or lines[0][0] != "input" or lines[-1][0] != "output":
                raise FrontendError(f"{path}: not a toy model (input ... output)")
            return lines[0][1], int(lines[0][2]), lines[1:-1], lines[-1][1]


        class ToyFrontend:
            tolerance = (1e-6, 0.0)
            options_type = ToyOptions

            def parse_options(self, args):
                if args.upper_bound:
                    raise FrontendError("toy models have no dynamic dims")
                return ToyOptions(scale_by=args.scale_by)

            def import_module(self, path, options):
                name, size, steps, result = _steps(path)
                t = f"tensor<{size}xf32>"
                body, declared = [], set()
                for target, _, op, *args in steps:
                    operands = [a for a in args if a.startswith(("x", "y", "z", "v"))]
                    declared.add((op, len(operands)))
                    attrs = ""
                    if op == "scale":
                        factor = float(args[1]) * getattr(options, "scale_by", 1.0)
                        attrs = f" {{factor = {factor:e} : f32}}"
                    ins = ", ".join(f"%{a}" for a in operands)
                    types = ", ".join([t] * len(operands))
                    body.append(f"    %{target} = func.call @toy.{op}({ins}){attrs} : ({types}) -> {t}")
                decls = [
                    f"  func.func private @toy.{op}({', '.join([t] * n)}) -> {t}"
                    for op, n in sorted(declared)
                ]
                text = "\\n".join([
                    "builtin.module {", *decls,
                    f"  func.func @main(%{name}: {t}) -> {t} {{", *body,
                    f"    func.return %{result} : {t}", "  }", "}",
                ])
                return Parser(memplan_context(), text).parse_module()

            def import_for_run(self, path, options):
                name, size, steps, result = _steps(path)

                def reference(arguments):
                    values = {name: np.asarray(arguments[0], dtype=np.float32)}
                    for target, _, op, *args in steps:
                        if op == "scale":
                            factor = np.float32(float(args[1]) * options.scale_by)
                            values[target] = values[args[0]] * factor
                        else:
                            values[target] = values[args[0]] + values[args[1]]
                    return [values[result]]

                return ImportedModel(self.import_module(path, options), {}, [], reference)

            def kernel_resolver(self):
                def resolve(declaration):
                    op = declaration.sym_name.data
                    if op == "toy.add":
                        return lambda ins, outs, attrs: np.add(ins[0], ins[1], out=outs[0])
                    if op == "toy.scale":
                        return lambda ins, outs, attrs: np.multiply(
                            ins[0], np.float32(attrs["factor"].value.data), out=outs[0]
                        )
                    return None

                return resolve

            def io_names(self, main, key):
                return None

            def weights(self, path, module, options):
                return {}


        FRONTEND = ToyFrontend()
        """,
    "stacking.py": """
        from memplan.passes.planning.model import Placement, Solution


        def stack(problem, options):
            placements, top = {}, 0
            for buffer in problem.buffers:
                top = -(-top // buffer.alignment) * buffer.alignment
                pool = buffer.candidates[0] if buffer.candidates else problem.pools[0].name
                placements[buffer.id] = Placement(pool, top)
                top += buffer.size
            return Solution(placements, "feasible", {"algorithm": "stack"})


        def count(report, **options):
            storages = sum(len(function.buffers) for function in report.functions)
            return f"{storages} storages\\n"
        """,
    "exporter.py": """
        from memplan.tools.exporters.protocol import Export, ExportError


        def add_arguments(parser):
            parser.add_argument("--header", default="# storage offset", help="the first line")


        def export(args, progress):
            from xdsl.parser import Parser

            from memplan.dialect.context import memplan_context
            from memplan.dialect.ops import AllocStorageOp

            module = Parser(memplan_context(), open(args.input).read()).parse_module()
            storages = [op for op in module.walk() if isinstance(op, AllocStorageOp)]
            if not storages or storages[0].offset is None:
                raise ExportError(f"{args.input}: not a planned module (no pinned storage)")
            lines = [args.header] + [f"{op.results[0].name_hint} {op.offset.value.data}" for op in storages]
            return Export(("\\n".join(lines) + "\\n").encode(), [f"{len(storages)} storages"])
        """,
}

ENTRY_POINTS = """\
[memplan.frontends]
toy = toyfmt:FRONTEND

[memplan.exporters]
offsets = toyfmt:EXPORTER

[memplan.algorithms]
stack = toyfmt.stacking:stack

[memplan.report_formats]
count = toyfmt.stacking:count
"""

MODEL = "input x 8\ny = scale x 2.0\nz = add y x\nw = scale z 0.5\noutput w\n"


@pytest.fixture
def plugin(tmp_path: Path) -> dict[str, str]:
    """The folder on ``PYTHONPATH``: the package and its distribution's
    entry points (what ``pip install`` of the plugin would write)."""
    package = tmp_path / "site" / "toyfmt"
    package.mkdir(parents=True)
    for name, text in TOY_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(text).lstrip())
    info = tmp_path / "site" / "toyfmt-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfmt\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (tmp_path / "model.toy").write_text(MODEL)
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _tool(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env, cwd=cwd
    )


def test_a_front_end_from_a_folder_imports_plans_and_runs(
    plugin: dict[str, str], tmp_path: Path
) -> None:
    """`memplan-import` reads the toy model by its suffix, with its own
    option; memplan-opt plans the result; `memplan-run` runs it planned and
    unplanned against the toy reference."""
    imported = _tool(plugin, tmp_path, "memplan-import", "model.toy", "--scale-by", "3")
    assert imported.returncode == 0, imported.stderr
    assert "func.call @toy.scale(%x) {factor = 6.000000e+00 : f32}" in imported.stdout
    help_text = _tool(plugin, tmp_path, "memplan-import", "--help").stdout
    assert "Toy options:" in help_text and "--scale-by" in help_text
    # Another format's option is refused for a toy model, and the toy's for ONNX.
    foreign = _tool(plugin, tmp_path, "memplan-import", "model.toy", "--subgraph", "1")
    assert foreign.returncode == 1
    assert "--subgraph: not an option of Toy models ('model.toy')" in foreign.stderr
    run = _tool(plugin, tmp_path, "memplan-run", "model.toy", "--scale-by", "3")
    assert run.returncode == 0, run.stderr
    assert "bit-identical" in run.stdout and "result: OK" in run.stdout


def test_an_exporter_from_a_folder_writes_a_planned_module(
    plugin: dict[str, str], tmp_path: Path
) -> None:
    """`memplan-export offsets` lists every storage of a planned module at
    its offset; an unplanned module is refused in one line, nothing written."""
    (tmp_path / "model.mlir").write_text(
        _tool(plugin, tmp_path, "memplan-import", "model.toy").stdout
    )
    planned = _tool(plugin, tmp_path, "memplan-opt", "model.mlir", "--plan", "-o", "planned.mlir")
    assert planned.returncode == 0, planned.stderr
    assert "offsets" in _tool(plugin, tmp_path, "memplan-export", "--help").stdout
    exported = _tool(
        plugin, tmp_path, "memplan-export", "offsets", "planned.mlir", "-o", "offsets.txt"
    )
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == "offsets.txt: 3 storages\n"
    lines = (tmp_path / "offsets.txt").read_text().splitlines()
    assert lines[0] == "# storage offset" and len(lines) == 4
    refused = _tool(plugin, tmp_path, "memplan-export", "offsets", "model.mlir", "-o", "bad.txt")
    assert (refused.returncode, refused.stderr) == (
        1,
        "memplan-export: error: model.mlir: not a planned module (no pinned storage)\n",
    )
    assert not (tmp_path / "bad.txt").exists()


def test_an_algorithm_and_a_report_format_from_a_folder_plan_and_report(
    plugin: dict[str, str], tmp_path: Path
) -> None:
    """`usmp{algorithm=stack}` plans with the toy algorithm (each storage
    above the last: the pool is the sum of the storages, which verify-plan
    accepts), `plan-report{format=count}` reports with the toy format, and
    both are among the choices a bad option value is told and ``--help``
    lists."""
    (tmp_path / "model.mlir").write_text(
        _tool(plugin, tmp_path, "memplan-import", "model.toy").stdout
    )
    planned = _tool(
        plugin,
        tmp_path,
        "memplan-opt",
        "model.mlir",
        "-p",
        "manifest-alloc,insert-kills,usmp{algorithm=stack},verify-plan,plan-report{format=count}",
    )
    assert planned.returncode == 0, planned.stderr
    assert planned.stderr == "3 storages\n"
    # Three 32-byte storages, one above the other at 64-byte alignment
    # (0, 64, 128): 160 bytes, where usmp's own plan shares bytes.
    assert 'memory.pool @workspace_cpu targets ["cpu"] used 160' in planned.stdout
    refused = _tool(plugin, tmp_path, "memplan-opt", "model.mlir", "-p", "usmp{algorithm=nope}")
    assert (
        "algorithm must be one of greedy-by-size, greedy-by-conflicts, hill-climb, exact, auto, stack (got 'nope')"
        in refused.stderr
    )
    refused = _tool(plugin, tmp_path, "memplan-opt", "model.mlir", "-p", "plan-report{format=nope}")
    assert (
        "format must be one of text, json, svg, trace, c-header, count (got 'nope')"
        in refused.stderr
    )
    # `memplan-opt --help` lists them among the options' choices.
    # argparse wraps lines after spaces and hyphens.
    help_text = _tool(plugin, tmp_path, "memplan-opt", "--help").stdout
    described = re.sub(r"(?<=-) ", "", " ".join(help_text.split()))
    assert (
        "algorithm=greedy-by-size|greedy-by-conflicts|hill-climb|exact|auto|stack (default: auto)"
        in described
    )
    assert "format=text|json|svg|trace|c-header|count (default: text)" in described
