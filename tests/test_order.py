"""tests/_order.py reorders the collected tests (DISTAL_TEST_ORDER=reverse or shuffle:SEED)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The second test depends on the first one's side effect: it fails when run first.
DEPENDENT = """
SEEN = []
def test_fills():
    SEEN.append(1)
def test_reads():
    assert SEEN
"""


def _run(tmp_path: Path, order: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_dependent.py").write_text(DEPENDENT)
    env = {**os.environ, "DISTAL_TEST_ORDER": order, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests._order", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_dependent.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False,
    )


def test_file_order_passes_and_reverse_order_finds_the_dependence(tmp_path: Path) -> None:
    assert _run(tmp_path, "").returncode == 0
    reverse = _run(tmp_path, "reverse")
    assert reverse.returncode == 1 and "1 failed, 1 passed" in reverse.stdout


def test_an_unknown_order_is_refused(tmp_path: Path) -> None:
    done = _run(tmp_path, "backwards")
    assert done.returncode != 0 and "expected DISTAL_TEST_ORDER 'reverse' or 'shuffle:SEED'" in done.stdout + done.stderr
