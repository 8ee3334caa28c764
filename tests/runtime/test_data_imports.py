"""The runtime's data modules interpret finished data: they import nothing of the synthesizers, lower or the model.

Formatted data (`_tensor_storage`, `_holders`, `_factor_grid`, `_interop`),
redistribution (`_redistribute`) and the tensor's entry point
(`_tensor_data`) read formats and layouts (`distal.format`), the machine,
and a redistribution finished by `distal.redist.finish` (its types,
`distal.redist.moves`). Every import counts, inside functions too; only
imports under ``if TYPE_CHECKING:`` do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "runtime"

DATA_MODULES = ["_redistribute", "_factor_grid", "_tensor_storage", "_holders", "_interop", "_tensor_data"]

#: What these modules may import from distal's compiler (each also allows its submodules).
ALLOWED = (
    "distal.errors",
    "distal.host",
    "distal.machine",
    "distal.format",
    "distal.notation.storage",
    "distal.tile_blas",
    "distal.contract",
    "distal.lower.task_graph",
    "distal.lower.executable",
    "distal.redist.moves",
)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every absolute import that runs, at any depth, outside ``if TYPE_CHECKING:``."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            for alias in node.names:  # `from distal.redist import moves` imports distal.redist.moves
                sub = f"{node.module}.{alias.name}"
                found.append((node.lineno, sub if _is_module(sub) else node.module))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _allowed(module: str) -> bool:
    if module != "distal" and not module.startswith("distal."):
        return True  # the standard library, NumPy, Legate
    return any(module == a or module.startswith(a + ".") for a in ALLOWED)


@pytest.mark.parametrize("name", DATA_MODULES)
def test_data_modules_import_only_finished_data(name: str) -> None:
    tree = ast.parse((ROOT / f"{name}.py").read_text())
    wrong = []
    for line, module in _imports(tree):
        if not _allowed(module):
            wrong.append(f"runtime/{name}.py:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_function_level_imports() -> None:
    """An import inside a function counts; one under TYPE_CHECKING does not."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from distal.redist.formats import FormatProgram\n"
        "def f():\n    from distal.redist.formats import mesh_of\n    import distal.model.predict\n"
        "    from distal.redist import moves, finish\n"
    )
    assert [m for _, m in _imports(tree) if not _allowed(m)] == [
        "distal.redist.formats", "distal.model.predict", "distal.redist.finish"]
