"""The architecture holds: import layers (import-linter) and no module reading another
module's private names."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

PACKAGE = ROOT / "daemon" / "personal_memory"


def modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE)): ast.parse(p.read_text(), str(p))
            for p in sorted(PACKAGE.rglob("*.py"))}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_definitions(tree: ast.Module) -> set[str]:
    """Private names a module defines: functions, classes, assignments, attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if is_private(n)}


def private_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """Private names a module reads as attributes, or imports from another module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and (node.level or "personal_memory" in (
                node.module or "")):
            out += [(node.lineno, a.name) for a in node.names if is_private(a.name)]
    return out


def violations(trees: dict[str, ast.Module]) -> list[str]:
    defined = {name: private_definitions(tree) for name, tree in trees.items()}
    found = []
    for name, tree in trees.items():
        for line, attr in private_reads(tree):
            owners = [other for other, names in defined.items()
                      if other != name and attr in names]
            if owners and attr not in defined[name]:
                found.append(f"{name}:{line} reads {attr} of {', '.join(owners)}")
    return found


def test_no_module_reads_another_modules_private_names():
    assert violations(modules()) == []


def test_the_private_name_check_can_fail():
    trees = {"a.py": ast.parse("def _helper():\n    pass\n"),
             "b.py": ast.parse("import a\na._helper()\n"),
             "c.py": ast.parse("from .a import _helper\n")}
    assert violations(trees) == ["b.py:2 reads _helper of a.py", "c.py:1 reads _helper of a.py"]


@pytest.mark.skipif(shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
                    reason="import-linter is installed with the test extras (./run-tests.sh)")
def test_import_layers_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    done = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
