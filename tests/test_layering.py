"""The layering the project promises, checked on the source (imports read
with ``ast``; the layers also for imports inside functions):

- every module sits in one layer and imports only from its own layer and
  the layers below it: the dialect < analysis and planning < passes < front
  ends and interpreters < tools (``LAYERS``);
- no import circles among memplan's modules;
- no pass module imports another pass module (shared code lives in
  ``passes/analysis``, ``passes/planning``, ``passes/report_formats`` or a
  helper module such as ``passes/storage_rewrites.py``; a pass's own helpers
  live in its package, as ``passes/usmp/``);
- no tool imports another tool (they share library modules: ``tools/pipeline.py``,
  ``tools/locations.py``, ``tools/progress.py``, ``tools/version.py``,
  ``tools/run_compare.py``, ``tools/frontends/``);
- a front end (a package under ``tools/frontends/``) imports the dialect, the
  shared front-end modules (``protocol``, ``common``) and itself: no pass, no
  tool library, no other format;
- an exporter (a package under ``tools/exporters/``) imports no other
  exporter;
- the tools reach a format only through ``tools/frontends/registry.py``
  and a target only through ``tools/exporters/registry.py``.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = {"memdialect": "memplan.dialect", "passes": "memplan.passes", "tools": "memplan.tools"}
TOOL_MODULES = {f"memplan.tools.{path.stem}" for path in (REPO / "tools").glob("memplan_*.py")}

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dialect", ("memplan.dialect",)),
    ("analysis/planning", ("memplan.passes.analysis", "memplan.passes.planning")),
    ("passes", ("memplan.passes",)),
    (
        "front ends/interpreters",
        ("memplan.tools.frontends", "memplan.dialect.interpreter", "memplan.dialect.reference"),
    ),
    ("tools", ("memplan.tools",)),
)
"""Lowest first; a module is in the layer of its longest matching prefix (the
interpreters live in ``memdialect/`` but run models, as the front ends do)."""


def _module_name(path: Path) -> str:
    folder, *rest = path.relative_to(REPO).with_suffix("").parts
    parts = [FOLDERS[folder], *rest]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


PASS_MODULES = {
    _module_name(path)
    for path in (REPO / "passes").rglob("*.py")
    if "class " in path.read_text() and "ModulePass):" in path.read_text()
}


@cache
def _tree(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once for all the tests here."""
    return ast.parse(path.read_text())


def _imports(path: Path, module: str, *, anywhere: bool = False) -> set[str]:
    """memplan modules imported at module level, or with ``anywhere`` inside
    functions too; never those under ``TYPE_CHECKING`` (they do not run).
    Module level is what import circles are about: a function's imports run
    after every module has loaded."""
    tree = _tree(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree) if anywhere else tree.body:
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("memplan.")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if base.startswith("memplan"):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {
        _module_name(path): path for folder in FOLDERS for path in (REPO / folder).rglob("*.py")
    }
    return {name: _imports(path, name) & set(modules) for name, path in modules.items()}


def test_no_import_circles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(graph[name]):
            if target == name or target.startswith(name + "."):
                continue  # a package importing its own submodule
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_no_pass_imports_another_pass() -> None:
    graph = _graph()
    offenders = {
        (name, target)
        for name in PASS_MODULES
        for target in graph.get(name, set()) & PASS_MODULES
        if target != name
    }
    assert not offenders
    assert "memplan.passes.usmp.usmp_pass" in PASS_MODULES  # the scan finds the passes


def test_no_tool_imports_another_tool() -> None:
    graph = _graph()
    offenders = {
        (name, target)
        for name in TOOL_MODULES
        for target in graph.get(name, set()) & TOOL_MODULES
        if target != name
    }
    assert not offenders
    assert "memplan.tools.memplan_opt" in TOOL_MODULES


FRONTENDS = "memplan.tools.frontends"
SHARED_FRONTEND_MODULES = {f"{FRONTENDS}.protocol", f"{FRONTENDS}.common"}


def test_front_ends_import_only_the_dialect_and_shared_front_end_modules() -> None:
    graph = _graph()
    formats = {
        f"{FRONTENDS}.{path.parent.name}"
        for path in (REPO / "tools" / "frontends").glob("*/__init__.py")
    }
    assert {f"{FRONTENDS}.onnx", f"{FRONTENDS}.tflite"} <= formats
    offenders = {
        (name, target)
        for name in graph
        for package in formats
        if name == package or name.startswith(package + ".")
        for target in graph[name]
        if not (
            target.startswith("memplan.dialect")
            or target in SHARED_FRONTEND_MODULES
            or target == package
            or target.startswith(package + ".")
        )
    }
    assert not offenders


EXPORTERS = "memplan.tools.exporters"


def _packages(folder: str) -> set[str]:
    """The names of the packages under ``tools/<folder>/`` (formats, targets)."""
    return {path.parent.name for path in (REPO / "tools" / folder).glob("*/__init__.py")}


def test_exporters_import_no_other_exporter() -> None:
    graph = _graph()
    targets = _packages("exporters")
    assert {"tflm", "executorch"} <= targets
    offenders = {
        (name, target)
        for name in graph
        for package in targets
        if name.startswith(f"{EXPORTERS}.{package}.")
        for target in graph[name]
        if target.startswith(EXPORTERS + ".")
        and target.split(".")[3] in targets
        and target.split(".")[3] != package
    }
    assert not offenders


def test_tools_reach_formats_and_targets_only_through_the_registries() -> None:
    """Every import of a tool, also those inside functions (the import CLIs
    load their front end after reading the command line)."""
    packages = {FRONTENDS: _packages("frontends"), EXPORTERS: _packages("exporters")}
    offenders: set[tuple[str, str]] = set()
    for path in (REPO / "tools").glob("*.py"):
        for node in ast.walk(_tree(path)):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                for prefix, found in packages.items():
                    parts = name.removeprefix(prefix + ".").split(".")
                    if name.startswith(prefix + ".") and parts[0] in found:
                        offenders.add((path.name, name))
    assert not offenders


def _layer(module: str) -> int:
    """The index in ``LAYERS`` of ``module``'s layer."""
    best = (-1, -1)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), index)
    assert best[1] >= 0, f"{module} is in no layer"
    return best[1]


def test_modules_import_only_their_layer_and_below() -> None:
    graph = _graph()
    offenders = sorted(
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, targets in graph.items()
        for target in targets
        if _layer(target) > _layer(name)
    )
    assert not offenders, "\n".join(offenders)
    # Every layer holds modules: the prefixes still name real packages.
    assert {_layer(name) for name in graph} == set(range(len(LAYERS)))
    assert _layer("memplan.dialect.interpreter") > _layer("memplan.passes")


def test_imports_inside_functions_respect_the_layers_too() -> None:
    """A lazy import (inside a function, to load a module only when used)
    is still a dependency: it may not reach a higher layer either."""
    modules = {
        _module_name(path): path for folder in FOLDERS for path in (REPO / folder).rglob("*.py")
    }
    offenders = sorted(
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, path in modules.items()
        for target in _imports(path, name, anywhere=True) & set(modules)
        if _layer(target) > _layer(name)
    )
    assert not offenders, "\n".join(offenders)
