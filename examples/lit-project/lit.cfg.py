# lit configuration of a project's own FileCheck tests of memplan's passes
# (docs/testing.md). Run with `lit -v tests/` after `pip install 'memplan[test]'`.
import os
import shutil
import sys

import lit.formats

config.name = "my-project"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py"]

# memplan-opt and filecheck from the environment lit runs in (a venv's bin),
# so that a PATH with another venv first cannot mix versions.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for tool in ("memplan-opt", "filecheck"):
    if shutil.which(tool, path=config.environment["PATH"]) is None:
        lit_config.fatal(f"{tool} not found: pip install 'memplan[test]' where lit runs")
