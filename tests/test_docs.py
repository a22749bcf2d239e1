"""The documentation says what the code does: the pass reference is generated
from the docstrings, every command shown with its output is run and
compared, relative links lead to files, and the README's Python snippet
runs.

A command "with its output shown" is a ```sh block followed, with nothing
but blank lines between, by one or more output blocks: a plain ``` block is
the whole of stdout or of stderr (a ``...`` line stands for lines left out;
absolute paths print as ``.../<name>``, times as ``<time>``), an ```mlir
block an excerpt (its lines, stripped, appear in that order). The blocks of
one page run in order in one shell, in a scratch directory that sees the
repository's folders, so a variable set in one block serves the next. Pages'
other commands (installs, downloads, hour-long campaigns) show no output and
are not run. Only docs/tools.md's SqueezeNet examples need a model that is
not in the repository: the `onnx` package's test data (skipped without
`onnx`); they take ~10 s, the rest ~3 s."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent


def test_pass_reference_is_generated_from_the_docstrings() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "docs" / "gen_passes.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_every_registered_pass_is_in_the_readme_table() -> None:
    from memplan.passes import get_all_passes

    listed = set(re.findall(r"^\| `([a-z-]+)` \|", README, re.M))
    assert set(get_all_passes()) <= listed


def test_readme_python_snippet_runs() -> None:
    snippet = README.split("## Use from Python", 1)[1].split("```python\n", 1)[1]
    snippet = snippet.split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert 'memory.pool @workspace_cpu targets ["cpu"] used 1024' in result.stdout
    assert result.stdout.count("at @workspace_cpu[") == 6


def test_readme_run_snippet_runs() -> None:
    """The second snippet: a model run planned, unplanned and by ONNX's evaluator."""
    snippet = README.split("## Use from Python", 1)[1].split("```python\n", 2)[2]
    snippet = snippet.split("```", 1)[0]
    assert "run_onnx" in snippet
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert "result: OK" in result.stdout and "bit-identical" in result.stdout


# --- docs/testing.md: a project's own lit tests ---------------------------------

LIT_PROJECT = REPO / "examples" / "lit-project"


def test_testing_doc_shows_the_example_project_as_it_is() -> None:
    doc = (REPO / "docs" / "testing.md").read_text()
    blocks = re.findall(r"```(?:python|mlir)\n(.*?)```", doc, re.S)
    assert blocks == [
        (LIT_PROJECT / "lit.cfg.py").read_text(),
        (LIT_PROJECT / "plan-two-layers.mlir").read_text(),
    ]


def _lit(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "lit"), "-v", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_testing_doc_example_passes_and_can_fail(tmp_path: Path) -> None:
    """lit runs the worked example with the test extra's tools; the same
    test with a wrong pool size fails, naming the check."""
    import shutil

    good = tmp_path / "good"
    shutil.copytree(LIT_PROJECT, good)
    result = _lit(good)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS: my-project :: plan-two-layers.mlir (1 of 1)" in result.stdout
    bad = tmp_path / "bad"
    shutil.copytree(LIT_PROJECT, bad)
    test = bad / "plan-two-layers.mlir"
    test.write_text(test.read_text().replace("used 8192", "used 4096"))
    result = _lit(bad)
    assert result.returncode == 1
    assert "FAIL: my-project :: plan-two-layers.mlir" in result.stdout
    assert 'memory.pool @workspace_cpu targets ["cpu"] used 4096' in result.stdout


# --- every command shown with its output ---------------------------------------

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def shown_commands(text: str) -> list[tuple[int, str, list[tuple[str, str]]]]:
    """(line, command, [(language, output), ...]) for each ```sh block of
    ``text`` directly followed by output blocks."""
    blocks = list(_BLOCK.finditer(text))
    found: list[tuple[int, str, list[tuple[str, str]]]] = []
    for index, block in enumerate(blocks):
        if block.group(1) != "sh":
            continue
        outputs: list[tuple[str, str]] = []
        end = block.end()
        for following in blocks[index + 1 :]:
            if text[end : following.start()].strip() or following.group(1) not in ("", "mlir"):
                break
            outputs.append((following.group(1), following.group(2)))
            end = following.end()
        if outputs:
            found.append((text[: block.start()].count("\n") + 1, block.group(2), outputs))
    return found


def _normalize(line: str) -> str:
    line = re.sub(r"(?<![\w.])/(?:[^\s/:'\"]+/)+", ".../", line)
    return re.sub(r"\b\d+(\.\d+)? ?s\b", "<time>", line).rstrip()


def _matches_stream(shown: str, stream: str) -> bool:
    """``shown`` (a plain block, ``...`` eliding lines) is the whole ``stream``."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." else re.escape(_normalize(line)) + r"\n"
        for line in shown.splitlines()
    )
    actual = "".join(_normalize(line) + "\n" for line in stream.splitlines())
    return re.fullmatch(pattern, actual) is not None


def _is_excerpt(shown: str, stream: str) -> bool:
    """Every line of ``shown``, stripped, is a line of ``stream``, in order."""
    lines = iter(_normalize(line).strip() for line in stream.splitlines())
    return all(
        any(line == want for line in lines)
        for want in (_normalize(w).strip() for w in shown.splitlines() if w.strip())
    )


@pytest.mark.parametrize(
    "page",
    [
        # The README's commands import and run models: over 10 s on 2 cores.
        pytest.param(p, marks=pytest.mark.slow) if p.name == "README.md" else p
        for p in PAGES
        if shown_commands(p.read_text())
    ],
    ids=lambda p: p.name,
)
def test_shown_commands_print_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    commands = shown_commands(page.read_text())
    if any("import onnx" in command for _, command, _ in commands):
        pytest.importorskip("onnx")
    for entry in REPO.iterdir():
        if entry.is_dir() and not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    script = "".join(
        f"{{\n{command}}} > {i}.out 2> {i}.err\necho $? > {i}.rc\n"
        for i, (_, command, _) in enumerate(commands)
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, check=True)
    for i, (line, command, outputs) in enumerate(commands):
        where = f"{page.name}:{line}: {command.strip()}"
        out, err = ((tmp_path / f"{i}.{s}").read_text() for s in ("out", "err"))
        assert (tmp_path / f"{i}.rc").read_text().strip() == "0", f"{where}\n{err}"
        for language, shown in outputs:
            if language == "mlir":
                assert _is_excerpt(shown, out), f"{where}: not in its stdout:\n{shown}\n{out}"
            else:
                assert _matches_stream(shown, out) or _matches_stream(shown, err), (
                    f"{where}: prints\n--- stdout\n{out}--- stderr\n{err}--- not\n{shown}"
                )


def test_the_examples_test_finds_the_commands() -> None:
    """The pages show these commands with their output (so the test above
    runs them): the README's, docs/tools.md's SqueezeNet pair and lit."""
    shown = {
        (page.name, command.split()[0])
        for page in PAGES
        for _, command, _ in shown_commands(page.read_text())
    }
    assert shown == {
        ("README.md", "memplan-opt"),
        ("README.md", "python"),
        ("tools.md", "M=$(python"),
        ("tools.md", "memplan-run"),
        ("testing.md", "lit"),
    }


def _prose(text: str) -> str:
    """``text`` without code blocks and code spans (``%s[0](%d0)`` is no link)."""
    return re.sub(r"`[^`]*`", "", _BLOCK.sub("", text))


def test_relative_links_lead_to_files() -> None:
    broken = [
        f"{page.relative_to(REPO)}: {target}"
        for page in PAGES
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", _prose(page.read_text()))
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken
