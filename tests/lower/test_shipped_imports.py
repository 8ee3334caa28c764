"""Nothing shipped imports a test-only dependency (issue 12): Hypothesis stays under tests/."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import distal

ROOT = Path(__file__).resolve().parents[2]
TEST_ONLY = ("hypothesis", "pytest")


def test_no_shipped_source_imports_a_test_dependency() -> None:
    pattern = re.compile(rf"^\s*(import|from)\s+({'|'.join(TEST_ONLY)})\b", re.MULTILINE)
    found = [str(p.relative_to(ROOT)) for folder in ("distal", "runtime", "kernels")
             for p in sorted((ROOT / folder).rglob("*.py")) if pattern.search(p.read_text())]
    assert found == [], f"shipped modules import a test-only dependency: {found}"


def test_importing_every_compiler_module_leaves_hypothesis_unimported() -> None:
    names = [m.name for m in pkgutil.walk_packages(distal.__path__, "distal.")
             if not m.name.startswith(("distal.runtime", "distal.kernels"))]
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            f"print(sorted(m for m in {TEST_ONLY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert importlib.util.find_spec("distal.testing") is None
