"""bench/suite.py's runner: a child that hangs is killed and reported, sizes that do not fit are refused (no timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # suite.py imports its neighbour _common
    spec = importlib.util.spec_from_file_location("bench_suite", BENCH / "suite.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_suite"] = module
    spec.loader.exec_module(module)
    return module


def test_a_child_that_never_answers_is_killed_and_reported_as_a_hang(suite: ModuleType, tmp_path: Path) -> None:
    script = tmp_path / "hangs.py"
    script.write_text("import sys, time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(suite.ChildHung, match=r"(?s)gave no result within 1 s and was killed: a hang.*started"):
        suite._child(["--sizes", "64"], {}, timeout=1.0, script=script)


def test_a_child_that_answers_gives_its_last_json_line(suite: ModuleType, tmp_path: Path) -> None:
    script = tmp_path / "answers.py"
    script.write_text("print('noise')\nprint('{\"matmul\": {\"64\": 1}}')\n")
    assert suite._child([], {}, timeout=60.0, script=script) == {"matmul": {"64": 1}}


def test_legate_pools_grow_with_the_problem(suite: ModuleType) -> None:
    sizes = [suite.sweep_sysmem(n) for n in (256, 1024, 2048, 4096)]
    assert sizes == sorted(sizes) and sizes[0] >= 1000
    assert sizes[-1] * 2**20 >= 24 * 4096 * 4096 * 8  # room for the operands of the sweep's plans at n = 4096
    assert suite.sweep_sysmem(4096) < 12000  # well under the single process's old pool
    ttv = suite.higher_sysmem("ttv", 600, 0)
    assert ttv * 2**20 >= 2 * (600**3 + 600 + 600**2) * 8  # distal's and cuPyNumeric's copies


def test_a_child_that_does_not_fit_in_host_memory_is_refused(suite: ModuleType) -> None:
    have = suite.available_mib()
    assert have is not None
    with pytest.raises(MemoryError, match=r"expected at least .* MiB of available host memory for matmul n=65536"):
        suite.check_host_memory("matmul n=65536", have * 4 + 1)
    suite.check_host_memory("tiny", 1.0)
