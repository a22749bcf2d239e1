"""memplan-opt, driven in-process through ``main`` (the console script's entry).

The pass-flag machinery is generic over ``passes.get_all_passes()``; these
tests swap in a registry of small test-only passes so that flag order,
options, abbreviations and pass failures are checked independently of the
real passes (which lit covers in test_lit/driver/).
"""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from memplan import passes
from memplan.tools.memplan_opt import main, pass_summary, split_flag_passes
from memplan.tools.version import memplan_version

REPO = Path(__file__).resolve().parents[2]

VALID = """\
func.func @f() {
  %s = memory.alloc_storage align 128 : !memory.storage<64>
  func.return
}
"""

BAD_ALIGNMENT = """\
func.func @bad() {
  %s = memory.alloc_storage align 48 : !memory.storage<64>
  func.return
}
"""


def _append_trace(op: ModuleOp, label: str) -> None:
    old = op.attributes.get("trace")
    labels = list(old.data) if isinstance(old, ArrayAttr) else []
    op.attributes["trace"] = ArrayAttr([*labels, StringAttr(label)])


@dataclass(frozen=True)
class TraceAlphaPass(ModulePass):
    """Append `label` to the module's `trace` attribute `count` times.

    Test-only; shows in which order the driver ran the passes.
    """

    name = "trace-alpha"

    label: str = "alpha"
    count: int = 1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for _ in range(self.count):
            _append_trace(op, self.label)


@dataclass(frozen=True)
class TraceBetaPass(ModulePass):
    """Append "beta" to the module's `trace` attribute."""

    name = "trace-beta"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _append_trace(op, "beta")


@dataclass(frozen=True)
class RejectPass(ModulePass):
    """Reject every module, as a pass does on input it cannot handle."""

    name = "reject-all"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        count = len(list(op.walk()))
        raise PassFailedException(f"reject-all: refusing a module of {count} ops")


@dataclass(frozen=True)
class BuggyPass(ModulePass):
    """Fail with an exception no pass should let escape."""

    name = "buggy"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise ZeroDivisionError("division by zero in buggy")


TEST_PASSES: dict[str, type[ModulePass]] = {
    cls.name: cls for cls in (TraceAlphaPass, TraceBetaPass, RejectPass, BuggyPass)
}


def _registry(
    classes: dict[str, type[ModulePass]],
) -> Callable[[], dict[str, Callable[[], type[ModulePass]]]]:
    return lambda: {name: (lambda cls=cls: cls) for name, cls in classes.items()}


@pytest.fixture
def test_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passes, "get_all_passes", _registry(TEST_PASSES))


@pytest.fixture
def valid_file(tmp_path: Path) -> Path:
    path = tmp_path / "valid.mlir"
    path.write_text(VALID)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _trace(output: str) -> list[str]:
    match = re.search(r"trace = \[([^\]]*)\]", output)
    assert match, output
    return re.findall(r'"([^"]*)"', match.group(1))


# --- pass flags -----------------------------------------------------------


@pytest.mark.usefixtures("test_passes")
def test_flags_run_in_command_line_order_then_p_list(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    code, out, err = _run(
        capsys,
        "--trace-beta",
        valid_file,
        "-p",
        "trace-alpha{label=from-p}",
        "--trace-alpha=label=second",
    )
    assert (code, err) == (0, "")
    assert _trace(out) == ["beta", "second", "from-p"]


@pytest.mark.usefixtures("test_passes")
def test_flag_options_match_the_p_syntax(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    code, by_flag, _ = _run(capsys, valid_file, "--trace-alpha=label=q count=3")
    assert code == 0
    assert _trace(by_flag) == ["q", "q", "q"]
    code, by_p, _ = _run(capsys, valid_file, "-p", "trace-alpha{label=q count=3}")
    assert code == 0
    assert by_flag == by_p


@pytest.mark.usefixtures("test_passes")
def test_flag_with_empty_options_uses_defaults(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    code, out, _ = _run(capsys, valid_file, "--trace-alpha=")
    assert code == 0
    assert _trace(out) == ["alpha"]


# Every user error the command line can cause: exit 1, nothing on stdout, and
# one diagnostic starting with "memplan-opt: error: " and the text given. In
# the arguments, "{valid}" is a valid input file.
USER_ERRORS: dict[str, tuple[list[str], str]] = {
    "abbreviated flag": (
        ["{valid}", "--trace-al"],
        "abbreviated pass flag --trace-al; write --trace-alpha in full\n",
    ),
    "ambiguous abbreviation": (
        ["{valid}", "--trace"],
        "abbreviated pass flag --trace; write --trace-alpha or --trace-beta in full\n",
    ),
    "abbreviated flag with options": (
        ["{valid}", "--trace-al=count=2"],
        "abbreviated pass flag --trace-al; write --trace-alpha in full\n",
    ),
    "abbreviated upstream option": (
        ["{valid}", "--split-input"],
        "unrecognized arguments: --split-input",
    ),
    "unknown option": (
        ["{valid}", "--trace-alpha=colour=red"],
        "in --trace-alpha=colour=red: trace-alpha: unknown option 'colour'; "
        "its options are label, count\n",
    ),
    "misspelt option": (
        ["{valid}", "--trace-alpha=cont=2"],
        "in --trace-alpha=cont=2: trace-alpha: unknown option 'cont' (did you mean 'count'?)\n",
    ),
    "integer option": (
        ["{valid}", "--trace-alpha=count=many"],
        "in --trace-alpha=count=many: trace-alpha: count must be an integer (got 'many')\n",
    ),
    "string option": (
        ["{valid}", "--trace-alpha=label=5"],
        'in --trace-alpha=label=5: trace-alpha: label must be a string (got 5; quote it: "5")\n',
    ),
    "pass without options": (
        ["{valid}", "--trace-beta=label=x"],
        "in --trace-beta=label=x: trace-beta: unknown option 'label'; it takes no options\n",
    ),
    "empty option value": (
        ["{valid}", "--trace-alpha=label="],
        "in --trace-alpha=label=: malformed pass pipeline at column",
    ),
    "detached options": (
        ["--trace-alpha", "label=z", "{valid}"],
        "options of --trace-alpha must be attached with '=': write --trace-alpha='label=z'\n",
    ),
    "pass failure": (
        ["{valid}", "--reject-all"],
        "reject-all: refusing a module of 4 ops\n",
    ),
    "unknown pass": (["{valid}", "-p", "nope"], "in -p 'nope': unknown pass 'nope'\n"),
    "misspelt pass": (
        ["{valid}", "-p", "dce,canonicalise"],
        "in -p 'dce,canonicalise': unknown pass 'canonicalise' (did you mean 'canonicalize'?)\n",
    ),
    "malformed pipeline": (
        ["{valid}", "-p", "dce{"],
        "in -p 'dce{': malformed pass pipeline at column 5",
    ),
    "unknown target": (["{valid}", "-t", "nope"], "argument -t/--target: invalid choice: 'nope'"),
    "unknown argument": (
        ["{valid}", "--frobnicate"],
        "unrecognized arguments: --frobnicate (see memplan-opt --help)\n",
    ),
}


@pytest.mark.usefixtures("test_passes")
@pytest.mark.parametrize("case", list(USER_ERRORS))
def test_user_errors(capsys: pytest.CaptureFixture[str], valid_file: Path, case: str) -> None:
    argv, expected = USER_ERRORS[case]
    code, out, err = _run(capsys, *(str(valid_file) if a == "{valid}" else a for a in argv))
    assert (code, out) == (1, "")
    assert err.startswith(f"memplan-opt: error: {expected}")
    assert "Traceback" not in err


@pytest.mark.usefixtures("test_passes")
def test_flags_after_double_dash_are_file_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("--trace-beta.mlir").write_text(VALID)
    code, out, err = _run(capsys, "--trace-alpha", "--", "--trace-beta.mlir")
    assert (code, err) == (0, "")
    assert _trace(out) == ["alpha"]


@pytest.mark.usefixtures("test_passes")
def test_help_lists_each_pass_flag_with_its_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    # argparse wraps to the terminal width; compare with whitespace collapsed.
    group = " ".join(out.split("memplan passes:", 1)[1].split())
    assert (
        "--trace-alpha Append `label` to the module's `trace` attribute `count` "
        "times. Options: label=<string> (default: alpha); count=<integer> (default: 1)."
    ) in group
    assert '--trace-beta Append "beta" to the module\'s `trace` attribute.' in group
    assert "--reject-all Reject every module" in group
    # Upstream passes are reachable through -p only.
    assert "--canonicalize" not in out
    assert "--debug" in out


def test_split_flag_passes_keeps_order_and_leaves_other_arguments() -> None:
    flags, rest = split_flag_passes(
        ["-p", "dce", "--usmp=a=1 b=x,y", "in.mlir", "--coalesce", "-o", "out"],
        ["coalesce", "usmp"],
    )
    assert [f.spec for f in flags] == ["usmp{a=1 b=x,y}", "coalesce"]
    assert [f.flag for f in flags] == ["--usmp=a=1 b=x,y", "--coalesce"]
    assert rest == ["-p", "dce", "in.mlir", "-o", "out"]


def test_pass_summary_is_the_first_sentence_unwrapped() -> None:
    @dataclass(frozen=True)
    class WrappedPass(ModulePass):
        """Pin every ``static`` storage to a pool at an offset, trying the
        candidates in order. Second sentence.

        Description.
        """

        name = "wrapped"

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            del ctx, op

    @dataclass(frozen=True)
    class UndocumentedPass(ModulePass):
        name = "undocumented"
        level: int = 1

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            del ctx, op

    assert pass_summary(WrappedPass) == (
        "Pin every `static` storage to a pool at an offset, trying the candidates in order."
    )
    # Not the dataclass-generated "UndocumentedPass(level: int = 1)", nor
    # ModulePass's docstring.
    assert pass_summary(UndocumentedPass) == ""


def _upstream_prefix_clashes(pass_names: list[str], help_text: str) -> list[str]:
    """Options of the driver that are a strict prefix of a pass flag.

    ``split_flag_passes`` would take such an option for an abbreviation. Pass
    flags themselves do not count: an exact pass name wins (``--plan`` is the
    `plan` pass, not an abbreviation of ``--plan-report``).
    """
    options = set(re.findall(r"(?<![\w-])--([a-z][\w-]*)", help_text)) - set(pass_names)
    return sorted(
        f"--{option} / --{name}"
        for name in pass_names
        for option in options
        if name != option and name.startswith(option)
    )


def test_no_driver_option_is_a_prefix_of_a_pass_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_names = list(passes.get_all_passes())
    code, help_text, _ = _run(capsys, "--help")
    assert code == 0
    assert _upstream_prefix_clashes(real_names, help_text) == []
    # The check itself catches a pass that would shadow `--shrink`.
    assert _upstream_prefix_clashes(["shrink-pools"], help_text) == ["--shrink / --shrink-pools"]


# --- failures ---------------------------------------------------------------


@pytest.mark.usefixtures("test_passes")
def test_pass_failure_under_verify_diagnostics_exits_zero(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    code, out, err = _run(capsys, valid_file, "--reject-all", "--verify-diagnostics")
    assert (code, err) == (0, "")
    assert out == "reject-all: refusing a module of 4 ops\n"


@pytest.mark.usefixtures("test_passes")
def test_internal_error_is_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    code, out, err = _run(capsys, valid_file, "--buggy")
    assert code == 2
    assert out == ""
    assert err == ("memplan-opt: internal error: ZeroDivisionError: division by zero in buggy\n")


@pytest.mark.usefixtures("test_passes")
def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str], valid_file: Path) -> None:
    code, _, err = _run(capsys, valid_file, "--buggy", "--debug")
    assert code == 2
    assert err.startswith("Traceback (most recent call last):")
    assert "in apply\n" in err
    assert err.endswith(
        "memplan-opt: internal error: ZeroDivisionError: division by zero in buggy\n"
    )


@pytest.mark.usefixtures("test_passes")
def test_split_input_file_reports_each_failing_chunk_and_continues(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "chunks.mlir"
    path.write_text(
        VALID
        + "// -----\n"
        + "func.func @g() {\n  %x = arith.constant : i32\n}\n"
        + "// -----\n"
        + BAD_ALIGNMENT
        + "// -----\n"
        + VALID.replace("@f", "@h")
    )
    code, out, err = _run(capsys, path, "--split-input-file", "--trace-beta")
    assert code == 1
    assert out.count("// -----\n") == 3
    assert "func.func @f()" in out
    assert "func.func @h()" in out
    assert "@g" not in out
    assert "@bad" not in out
    # Line numbers count from the start of the file, not of the chunk.
    assert err.startswith(f"{path}:7:23: error: attribute expected\n")
    assert (f"{path}:11:3: error: storage %s: alignment must be a power of two, got 48") in err


def test_parse_error_names_the_input_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.mlir"
    path.write_text('func.func @f() {\n  "test.op"() : () -> (\n}\n')
    code, out, err = _run(capsys, path)
    assert code == 1
    assert out == ""
    first, *context = err.splitlines()
    assert re.fullmatch(rf"{re.escape(str(path))}:3:1: error: .+", first)
    assert context[0] == "}"
    assert context[1] == "^"


def test_verifier_error_message_comes_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(BAD_ALIGNMENT)
    code, out, err = _run(capsys, path)
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"{path}:2:3: error: storage %s: alignment must be a power of two, got 48",
        "  %s = memory.alloc_storage align 48 : !memory.storage<64>",
        "  ^",
    ]
    # The module annotated with the error, only for memplan developers.
    code, _, err = _run(capsys, path, "--debug")
    assert code == 1
    assert "| Operation does not verify: storage %s" in err
    assert "Traceback" in err


def test_verifier_error_in_a_big_module_is_a_few_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One duplicated kill among 1,000 ops: the diagnostic is the error, the
    note on the first kill and their lines (not the module, 1,000+ lines)."""
    lines = ["func.func private @k(memref<4xf32>)", "func.func @big() {"]
    for i in range(333):
        lines += [
            f"  %s{i} = memory.alloc_storage : !memory.storage<16>",
            f"  %t{i} = memory.alloc_tensor %s{i}[0] : !memory.storage<16> -> memref<4xf32>",
            f"  memory.invoke @k outs(%t{i} : memref<4xf32>)",
        ]
    lines += ["  memory.kill %t7 : memref<4xf32>", "  memory.kill %t7 : memref<4xf32>"]
    lines += ["  func.return", "}"]
    path = tmp_path / "big.mlir"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = _run(capsys, path)
    assert code == 1 and out == ""
    assert len(err.splitlines()) < 20
    assert err.splitlines()[0] == f"{path}:1003:3: error: %t7 is killed twice on one path"
    assert f"{path}:1002:3: note: first kill here" in err


def test_unreadable_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.mlir"
    code, _, err = _run(capsys, missing)
    assert code == 1
    assert err == (
        f"memplan-opt: error: cannot read input file '{missing}': No such file or directory\n"
    )
    code, _, err = _run(capsys, tmp_path)
    assert code == 1
    assert err == (f"memplan-opt: error: cannot read input file '{tmp_path}': Is a directory\n")


def test_unknown_extension_and_bad_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = tmp_path / "prog.txt"
    text.write_text(VALID)
    code, _, err = _run(capsys, text)
    assert code == 1
    assert err == ("memplan-opt: error: Unrecognized file extension 'txt' (use -f mlir)\n")
    code, out, _ = _run(capsys, text, "-f", "mlir")
    assert code == 0
    assert "func.func @f()" in out

    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b'"test.op"() {x = "\xff\xfe"} : () -> ()\n')
    code, _, err = _run(capsys, binary)
    assert code == 1
    assert err.startswith("memplan-opt: error: input is not valid UTF-8")


def test_deeply_nested_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    depth = 5000
    path = tmp_path / "deep.mlir"
    path.write_text('"test.op"() ({\n' * depth + "}) : () -> ()\n" * depth)
    code, out, err = _run(capsys, path)
    assert code == 1
    assert out == ""
    assert err == "memplan-opt: error: input nested too deeply\n"


def test_stdin_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b'"test.op"() : () -> (\n'))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, _, err = _run(capsys, "-")
    assert code == 1
    assert err.startswith("<stdin>:2:1: error: type expected")


# --- -o --------------------------------------------------------------------


def _directory_entries(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def test_output_file_written_on_success(
    capsys: pytest.CaptureFixture[str], valid_file: Path, tmp_path: Path
) -> None:
    output = tmp_path / "out.mlir"
    output.write_text("keep\n")
    output.chmod(0o640)
    code, out, err = _run(capsys, valid_file, "-o", output)
    assert (code, out, err) == (0, "", "")
    assert "memory.alloc_storage align 128" in output.read_text()
    assert output.stat().st_mode & 0o777 == 0o640
    assert _directory_entries(tmp_path) == ["out.mlir", "valid.mlir"]


def test_output_file_untouched_on_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(VALID + "// -----\n" + BAD_ALIGNMENT)
    output = tmp_path / "out.mlir"
    output.write_text("keep\n")
    code, _, err = _run(capsys, bad, "--split-input-file", "-o", output)
    assert code == 1
    assert "alignment must be a power of two" in err
    assert output.read_text() == "keep\n"
    assert _directory_entries(tmp_path) == ["bad.mlir", "out.mlir"]


def test_output_file_not_created_on_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD_ALIGNMENT)
    code, _, _ = _run(capsys, bad, "-o", tmp_path / "new.mlir")
    assert code == 1
    assert _directory_entries(tmp_path) == ["bad.mlir"]


def test_output_to_a_device_writes_through_it(
    capsys: pytest.CaptureFixture[str], valid_file: Path
) -> None:
    # Replacing /dev/null by a regular file would break the machine.
    code, _, err = _run(capsys, valid_file, "-o", os.devnull)
    assert (code, err) == (0, "")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_output_file_in_missing_directory(
    capsys: pytest.CaptureFixture[str], valid_file: Path, tmp_path: Path
) -> None:
    output = tmp_path / "no-such-dir" / "out.mlir"
    code, _, err = _run(capsys, valid_file, "-o", output)
    assert code == 1
    assert err == (
        f"memplan-opt: error: cannot write output file '{output}': No such file or directory\n"
    )


def test_verify_diagnostics_writes_output_and_exits_zero(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD_ALIGNMENT)
    code, out, err = _run(capsys, bad, "--verify-diagnostics")
    assert (code, err) == (0, "")
    assert out.startswith("storage %s: alignment must be a power of two, got 48\n")


def test_parsing_diagnostics_exits_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "broken.mlir"
    path.write_text('"test.op"() : () -> (\n')
    code, out, err = _run(capsys, path, "--parsing-diagnostics")
    assert (code, err) == (0, "")
    assert out.startswith(f"{path}:2:1\n")
    assert "type expected" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--version")
    assert code == 0
    assert re.fullmatch(r"memplan-opt \S+ \(xdsl 0\.74\.\d+\)\n", out)
    assert memplan_version() in out


# --- as a program -------------------------------------------------------------


def test_module_entry_point_reports_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD_ALIGNMENT)
    result = subprocess.run(
        [sys.executable, "-m", "memplan.tools.memplan_opt", str(bad), "-p", "dce"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"{bad}:2:3: error: storage %s: alignment must be a power of two, got 48\n"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "module", ["memplan_opt", "memplan_run", "memplan_import", "memplan_solve"]
)
def test_every_tool_prints_its_version(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"memplan.tools.{module}", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    name = module.replace("_", "-")
    assert re.fullmatch(rf"{name} \S+ \(xdsl 0\.74\.\d+\)\n", result.stdout)


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal, stderr shows the stage, reading, each pass, writing
    (here from the start: MEMPLAN_PROGRESS_DELAY=0), and erases it at the
    end; piped, nothing."""
    import pty

    example = REPO / "examples" / "convnet.mlir"
    argv = [sys.executable, "-m", "memplan.tools.memplan_opt", str(example)]
    argv += ["--manifest-alloc", "--insert-kills", "--usmp", "-o", str(tmp_path / "o.mlir")]
    env = {**os.environ, "MEMPLAN_PROGRESS_DELAY": "0"}
    leader, follower = pty.openpty()
    with subprocess.Popen(argv, stderr=follower, stdout=subprocess.DEVNULL, env=env) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert f"memplan-opt: reading {example}" in shown
    assert "memplan-opt: pass 1/3, manifest-alloc" in shown
    assert "memplan-opt: pass 3/3, usmp" in shown
    assert "memplan-opt: writing" in shown
    assert shown.endswith("\r\x1b[K")
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert piped.stderr == ""


@pytest.mark.parametrize(
    ("flags", "checks"),
    [
        # After parsing; not again after plan, whose verify-plan step checked
        # the module it leaves.
        (["--plan"], 1),
        (["--plan=verify=false"], 2),
        (["--manifest-alloc", "--insert-kills", "--usmp", "--verify-plan"], 4),
    ],
)
def test_kill_order_is_not_checked_twice_in_a_row(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    checks: int,
) -> None:
    """memplan-opt checks the kill order after parsing and after each pass,
    except right after a pass that ended with that check (verify-plan, plan)."""
    import memplan.tools.memplan_opt as memplan_opt

    calls: list[object] = []
    check = memplan_opt.verify_kill_order

    def counting(module: ModuleOp) -> None:
        calls.append(module)
        check(module)

    monkeypatch.setattr(memplan_opt, "verify_kill_order", counting)
    assert main([str(REPO / "examples" / "mlp.mlir"), *flags]) == 0
    assert "memory.pool" in capsys.readouterr().out
    assert len(calls) == checks
