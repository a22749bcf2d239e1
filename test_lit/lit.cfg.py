"""lit configuration for memplan's FileCheck suite.

Tools are looked up next to the interpreter running lit (the venv's ``bin``),
so a mixed PATH never pairs a ``memplan-opt`` from one venv with a
``filecheck`` from another. memplan must be installed in that interpreter
(``pip install -e .``): its packages live under the ``memplan`` namespace,
which only the install maps onto the repository's folders.
"""

import os
import shutil
import sys

import lit.formats

config.name = "memplan"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

repo_root = os.path.dirname(config.test_source_root)
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for name in ("HOME", "TMPDIR", "LD_LIBRARY_PATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(
    (
        "MEMPLAN_ROUNDTRIP",
        "memplan-opt %s --print-op-generic --split-input-file "
        "| memplan-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(
    (
        "MEMPLAN_GENERIC_ROUNDTRIP",
        "memplan-opt %s --print-op-generic --split-input-file "
        "| filecheck %s --check-prefix=CHECK-GENERIC",
    )
)
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%repo", repo_root))

if not shutil.which("memplan-opt", path=bin_dir):
    lit_config.fatal(
        f"memplan-opt not found in {bin_dir}: install memplan into the "
        "interpreter running lit (pip install -e '.[test]')"
    )

# `lit -D quick=1` (run_tests.sh --quick) skips the slowest files, marked
# `UNSUPPORTED: quick`.
if lit_config.params.get("quick"):
    config.available_features.add("quick")

mlir_bin = "/usr/lib/llvm-22/bin"
if os.path.exists(os.path.join(mlir_bin, "mlir-opt")):
    config.available_features.add("mlir")
    config.substitutions.append(("%mlir_bin", mlir_bin))
if shutil.which("gcc"):
    config.available_features.add("gcc")

try:
    import onnx  # noqa: F401

    config.available_features.add("onnx")
except ImportError:
    pass

try:
    import tflite  # noqa: F401

    config.available_features.add("tflite")
except ImportError:
    pass

# ExecuTorch (the [executorch] extra), found without importing torch here.
import importlib.util  # noqa: E402

if importlib.util.find_spec("executorch") is not None:
    config.available_features.add("executorch")

# Keep one hung test from stalling the suite.
try:
    lit_config.maxIndividualTestTime = 300
except AttributeError:
    pass
