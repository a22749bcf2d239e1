#!/usr/bin/env bash
# Installs everything memplan's tests need into a fresh virtual environment
# and runs the whole suite: lit/FileCheck (test_lit/) and pytest (tests/).
# The end-to-end MLIR tests need Debian's mlir-22-tools; it is installed here
# when missing (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x /usr/lib/llvm-22/bin/mlir-opt ] && command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq mlir-22-tools
fi

# A fresh venv every run (removed and recreated), so the suite never passes
# on something installed by hand; MEMPLAN_VENV picks another place for it.
venv="${MEMPLAN_VENV:-.venv-test}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -e '.[test]'

# Lint and types: ruff (check + format) and pyright (basic). The editable
# install maps memplan.* with an import hook pyright cannot follow, so the
# folders are linked under build/typecheck/memplan/ (pyproject's extraPaths).
mkdir -p build/typecheck/memplan
ln -sfn ../../../memdialect build/typecheck/memplan/dialect
ln -sfn ../../../passes build/typecheck/memplan/passes
ln -sfn ../../../tools build/typecheck/memplan/tools
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/pyright" --pythonpath "$venv/bin/python"

"$venv/bin/lit" -v test_lit
"$venv/bin/pytest" -W error -q
