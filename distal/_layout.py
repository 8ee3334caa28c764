"""Import `distal.runtime` and `distal.kernels` from `runtime/` and `kernels/`.

DESIGN.md puts the Legate backend and the algorithm library at the repository
root; this finder maps exactly those two names onto those folders (no other
root folder becomes part of the package).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

_ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = {"distal.runtime": _ROOT / "runtime", "distal.kernels": _ROOT / "kernels"}


class _RootPackageFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        folder = _PACKAGES.get(fullname)
        if folder is None or not (folder / "__init__.py").is_file():
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def install() -> None:
    if not any(isinstance(f, _RootPackageFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _RootPackageFinder())
