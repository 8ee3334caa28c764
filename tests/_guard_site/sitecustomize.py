"""Loaded at start-up by the Python child processes of a test not marked `legate`.

tests/conftest.py puts this folder first on such a test's PYTHONPATH and names
a record file in DISTAL_TEST_LEGATE_CHILDREN: a child's first import of Legate
(or cuPyNumeric, which starts it) is written there, and the test fails once it
has run. The child itself runs on unchanged. Without the variable (any other
process that finds this folder) nothing happens.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_RECORD = os.environ.get("DISTAL_TEST_LEGATE_CHILDREN")
_PACKAGES = tuple(os.environ.get("DISTAL_TEST_LEGATE_PACKAGES", "legate,cupynumeric").split(","))


class _Recorder:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        top = fullname.partition(".")[0]
        if _RECORD and top in _PACKAGES and top not in sys.modules:
            with open(_RECORD, "a") as record:
                record.write(f"process {os.getpid()} ({' '.join(sys.argv)[:120]}) imported {top!r}\n")
        return None


if _RECORD:
    sys.meta_path.insert(0, _Recorder())
