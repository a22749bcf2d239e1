#!/usr/bin/env bash
# Installs everything memplan's tests need into a fresh virtual environment
# and runs the whole suite: lint and types, lit/FileCheck (test_lit/) and
# pytest (tests/). The end-to-end MLIR tests need Debian's mlir-22-tools; it
# is installed here when missing (as root, or through sudo).
#
#   ./run_tests.sh                 # CI's run: a fresh venv, every test
#   ./run_tests.sh --reuse-venv    # the same tests, in the venv of the last
#                                  # run if pyproject.toml has not changed
#   ./run_tests.sh --quick         # a developer's check: --reuse-venv, no
#                                  # pyright, no tests marked slow (pytest
#                                  # -m slow, lit UNSUPPORTED: quick)
#   ./run_tests.sh --shuffle       # with the other flags: lit and pytest in
#                                  # a random order (pytest's seed is printed;
#                                  # lit's random order takes no seed)
#   ./run_tests.sh --unpinned      # a fresh venv with the newest releases
#                                  # .[test] admits, not the pinned ones
#
# Python packages are pinned by requirements/test-constraints.txt (how to
# move them on is written there). pytest runs on every core (pytest-xdist;
# the tests of one xdist_group on one worker). pyright, on one core, runs
# beside lit.
set -euo pipefail
cd "$(dirname "$0")"

reuse=0
quick=0
shuffle=0
constraints=(-c requirements/test-constraints.txt)
for arg in "$@"; do
  case "$arg" in
    --reuse-venv) reuse=1 ;;
    --quick) reuse=1 quick=1 ;;
    --shuffle) shuffle=1 ;;
    --unpinned) constraints=() ;;
    *) echo "run_tests.sh: unknown argument '$arg' (--reuse-venv, --quick, --shuffle, --unpinned)" >&2; exit 1 ;;
  esac
done
lit_order=()
pytest_order=()
if [ "$shuffle" -eq 1 ]; then
  lit_order=(--order=random)
  seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
  echo "run_tests.sh: pytest's order: --random-order-seed=$seed"
  pytest_order=(--random-order-seed="$seed")
fi

if [ ! -x /usr/lib/llvm-22/bin/mlir-opt ] && command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq mlir-22-tools
fi

# A fresh venv (removed and recreated), so the suite never passes on
# something installed by hand; MEMPLAN_VENV picks another place for it. With
# --reuse-venv the last one is kept when it was made from this pyproject.toml
# (the editable install follows every other change of the tree).
venv="${MEMPLAN_VENV:-.venv-test}"
stamp="$venv/memplan-pyproject.sha256"
wanted="$(cat pyproject.toml requirements/test-constraints.txt - <<< "$PWD ${constraints[*]}" | sha256sum | cut -d' ' -f1)"  # and which tree
if [ "$reuse" -eq 1 ] && [ -x "$venv/bin/pytest" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  echo "run_tests.sh: reusing $venv (pyproject.toml unchanged)"
else
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "${constraints[@]}" -e '.[test]'
  echo "$wanted" > "$stamp"
fi

# Lint and types: ruff (check + format) and pyright (basic). The editable
# install maps memplan.* with an import hook pyright cannot follow, so the
# folders are linked under build/typecheck/memplan/ (pyproject's extraPaths).
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
if [ "$quick" -eq 0 ]; then
  mkdir -p build/typecheck/memplan
  ln -sfn ../../../memdialect build/typecheck/memplan/dialect
  ln -sfn ../../../passes build/typecheck/memplan/passes
  ln -sfn ../../../tools build/typecheck/memplan/tools
  # pyright in its own process group (its wrapper starts node), stopped with
  # the whole group if lit fails or the run is interrupted.
  pyright_log="$(mktemp)"
  setsid "$venv/bin/pyright" --pythonpath "$venv/bin/python" > "$pyright_log" 2>&1 &
  pyright_pid=$!
  trap 'kill -- -"$pyright_pid" 2> /dev/null || true; rm -f "$pyright_log"' EXIT
  lit_status=0
  "$venv/bin/lit" -v "${lit_order[@]}" test_lit || lit_status=$?
  pyright_status=0
  wait "$pyright_pid" || pyright_status=$?
  trap 'rm -f "$pyright_log"' EXIT  # its process id may be another's now
  cat "$pyright_log"
  if [ "$pyright_status" -ne 0 ] || [ "$lit_status" -ne 0 ]; then
    exit 1
  fi
  "$venv/bin/pytest" -W error -q -n auto --dist loadgroup "${pytest_order[@]}"
else
  "$venv/bin/lit" -q "${lit_order[@]}" -D quick=1 test_lit
  "$venv/bin/pytest" -W error -q -n auto --dist loadgroup "${pytest_order[@]}" -m "not slow"
fi
