"""The examples in the docstrings of every module of distal run and give what they show.

Every module of `distal`, `distal.runtime` (from `runtime/`) and
`distal.kernels` (from `kernels/`) whose source shows an example (`>>>`) is found
from the source files (nothing is imported at collection, so collecting does
not load Legate) and its doctests run with ELLIPSIS. Examples that need a started Legate with a given machine
are marked `# doctest: +SKIP` in the module itself; a module whose examples run on Legate is in `ON_LEGATE`
(its case carries the `legate` marker).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ((ROOT / "distal", "distal"), (ROOT / "runtime", "distal.runtime"), (ROOT / "kernels", "distal.kernels"))


def _module_names() -> list[str]:
    names = []
    for folder, package in TREES:
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if ">>>" in path.read_text():
                names.append(".".join([package, *parts]))
    return names


MODULES = _module_names()
ON_LEGATE = {"distal.runtime._reduce"}  # reduce_partials and reduce_arrays run their examples on Legate


def test_the_modules_are_found() -> None:
    assert {"distal", "distal.cin.placement", "distal.runtime._config", "distal.kernels"} <= set(MODULES)
    assert ON_LEGATE <= set(MODULES)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.legate) if name in ON_LEGATE else name
                                  for name in MODULES])
def test_docstring_examples(name: str) -> None:
    if name == "distal.format.picture":
        pytest.importorskip("matplotlib")
    module = importlib.import_module(name)
    assert any(test.examples for test in doctest.DocTestFinder().find(module)), f"{name}: `>>>` outside docstrings"
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (run doctest on it)"
