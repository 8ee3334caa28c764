"""bench/weak_scaling.py's cases at small node counts: the paper's qualitative findings hold in the model."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from distal.cli import BENCHES

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def weak() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("weak_scaling", BENCH / "weak_scaling.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_the_bench_command_names_the_scripts() -> None:
    assert BENCHES["weak-scaling"] == "weak_scaling.py" and (BENCH / "weak_scaling.py").is_file()
    assert BENCHES["validate-model"] == "validate_model.py" and (BENCH / "validate_model.py").is_file()


def test_ttv_and_ttm_move_nothing_between_nodes(weak: ModuleType) -> None:
    for name in ("ttv", "ttm"):
        row = weak.predict_case(name, 8, "gpu")
        assert row["max_inter_node_bytes"] == 0 and row["comm_seconds"] == 0, name


def test_cannon_beats_summa_on_a_wide_gpu_grid(weak: ModuleType) -> None:
    summa, cannon = weak.predict_case("summa", 64, "gpu"), weak.predict_case("cannon", 64, "gpu")
    assert cannon["per_node"] > summa["per_node"]


def test_sizes_grow_as_in_the_paper(weak: ModuleType) -> None:
    assert weak._shapes("summa", 4, "gpu")[0] == (39936, 39936)  # 40000 rounded to a multiple of 256
    assert weak._shapes("summa", 4, "cpu")[0] == (16384, 16384)
    assert weak._shapes("ttv", 8, "cpu")[1] == (2048, 2048, 2048)
