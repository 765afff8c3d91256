"""benchmarks/ is a package of two kits: every script runs as `python -m benchmarks.KIT.NAME`, answers --help, shares
what it shares through benchmarks.kit, and never edits sys.path; the manual names every script."""

from __future__ import annotations

import ast
import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest
from support import ROOT

from benchmarks import kit

SCRIPTS = sorted(path for kit_dir in ("speed", "answers") for path in (ROOT / "benchmarks" / kit_dir).glob("*.py"))
SCRIPTS = [path for path in SCRIPTS if path.name != "__init__.py"]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_there_are_the_two_kits() -> None:
    names = {path.parent.name for path in SCRIPTS}
    assert names == {"speed", "answers"} and len(SCRIPTS) >= 19
    assert not list((ROOT / "benchmarks").glob("*_bench.py")), "a script outside the two kits"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: module_name(path))
def test_a_script_edits_no_sys_path(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    edits = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "path"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "sys"
    ]
    assert not edits, f"{path.name} edits sys.path at lines {edits}: import from benchmarks.kit instead"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: module_name(path))
def test_a_script_answers_help(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(path), "--help"])
    monkeypatch.delitem(sys.modules, module_name(path), raising=False)  # run as __main__, not the one imported
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        runpy.run_module(module_name(path), run_name="__main__", alter_sys=False)
    assert stop.value.code == 0 and out.getvalue().startswith("usage:"), out.getvalue()[-500:]


def test_the_manual_names_every_script() -> None:
    manual = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for path in SCRIPTS:
        assert f"`{path.parent.name}/{path.stem}`" in manual, path.stem  # its row in the current figures
    assert len(manual.splitlines()) < 300


def test_the_kit_finds_the_repository_and_its_sample_corpus() -> None:
    assert kit.ROOT == ROOT and kit.SAMPLE_QUESTIONS.is_file()
    assert kit.holds("The Vistula flows through Warsaw.", ("the vistula",))
    assert not kit.holds("The Vistulan plain.", ("Vistula",))  # a whole-word run only
