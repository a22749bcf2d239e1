"""The documentation says what the code does: the pass reference is generated
from the docstrings, and the README's example and Python snippet run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


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


def test_readme_example_output_is_what_memplan_opt_prints() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplan.tools.memplan_opt",
            "--plan",
            "--plan-report",
            "examples/mlp.mlir",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    report = result.stderr.splitlines()[:3]
    assert "\n".join(report) in README
    for line in re.findall(r"^  (memory\.pool .*|  %h\d_storage = .*)$", README, re.M):
        assert line.strip() in result.stdout


def test_readme_python_snippet_runs() -> None:
    snippet = README.split("## Use from Python", 1)[1].split("```python\n", 1)[1]
    snippet = snippet.split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert 'memory.pool @workspace_cpu targets ["cpu"] used 1024' in result.stdout
    assert result.stdout.count("at @workspace_cpu[") == 6


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
