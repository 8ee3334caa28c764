"""`distal bench check`'s comparison: recorded ratios against new ones (no timing)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from distal.cli import _ONLY_WHEN_NAMED, BENCHES

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_check", BENCH / "check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_bench_command_runs_check_only_when_named() -> None:
    assert BENCHES["check"] == "check.py" and (BENCH / "check.py").is_file()
    assert "check" in _ONLY_WHEN_NAMED


def test_a_ratio_that_fell_beyond_the_tolerance_is_flagged(check: ModuleType) -> None:
    recorded = {"ttm_vs_numpy": 1.20, "ttv_vs_numpy": 1.00, "summa_vs_numpy": 1.00, "mttkrp_vs_cupynumeric": 3.5}
    new = {"ttm_vs_numpy": 0.90, "ttv_vs_numpy": 0.90, "summa_vs_numpy": 1.30, "innerprod_vs_numpy": 0.1}
    falls = check.compare(recorded, new, 0.15)
    assert [f.name for f in falls] == ["ttm_vs_numpy"]  # -25 %; TTV's -10 % is within 15 %; rises pass
    assert falls[0].recorded == 1.20 and falls[0].new == 0.90
    assert "ttm_vs_numpy: 0.90x, recorded 1.20x (-25%)" == str(falls[0])
    assert [f.name for f in check.compare(recorded, new, 0.05)] == ["ttm_vs_numpy", "ttv_vs_numpy"]
    assert check.compare(recorded, recorded, 0.0) == []
    with pytest.raises(ValueError, match="tolerance"):
        check.compare(recorded, new, 1.5)


def test_ratios_are_the_others_median_over_distals(check: ModuleType) -> None:
    samples = {"ttv:distal": [1.0, 2.0, 3.0], "ttv:numpy": [1.0, 1.0, 9.0], "ttv:cupynumeric": [4.0, 4.0, 4.0]}
    assert check.ratios(samples) == {"ttv_vs_numpy": 0.5, "ttv_vs_cupynumeric": 2.0}


def test_recorded_ratios_are_read_from_suite_and_matmul_results(check: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(json.dumps({
        "higher": {"ttm": {"size": [30, 90]}},
        "summary": {"ttm_p2": {"vs_numpy": 0.55, "vs_cupynumeric": 2.8}, "matmul_4096_p2": {"vs_numpy": 0.9}}}))
    (tmp_path / "matmul.json").write_text(json.dumps({
        "n": 1024, "numpy": {"seconds": 1.5}, "distal": {"summa_2x2_chunk4096": {"seconds": 1.0}}}))
    assert check.recorded_ratios(tmp_path) == {"ttm_vs_numpy": 0.55, "ttm_vs_cupynumeric": 2.8,
                                               "summa_vs_numpy": 1.5}
    higher, n = check.recorded_sizes(tmp_path)
    assert higher["ttm"] == (30, 90) and n == 1024


def test_the_checkouts_recorded_results_give_every_tracked_ratio(check: ModuleType) -> None:
    names = set(check.recorded_ratios())
    assert {f"{k}_vs_{w}" for k in check.KERNELS for w in check.AGAINST} | {"summa_vs_numpy"} <= names


def test_the_baseline_is_the_check_section_the_suite_records(check: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(json.dumps({  # the old layout: used only without a check section
        "higher": {"ttm": {"size": [30, 90]}}, "summary": {"ttm_p2": {"vs_numpy": 0.55, "vs_cupynumeric": 2.8}}}))
    baseline: dict[str, Any] = {"sizes": {"ttm": [40, 80], "ttv": [60, 0]}, "rounds": 5, "quick": False,
                                "ratios": {"ttm_vs_numpy": 0.9, "ttv_vs_cupynumeric": 4.0}}
    interleaved = {"higher": {"ratios": {"ttm_vs_numpy": 9.0}}, "check": baseline}  # higher: the suite's sizes
    (tmp_path / "suite_interleaved.json").write_text(json.dumps(interleaved))
    assert check.recorded_ratios(tmp_path) == {"ttm_vs_numpy": 0.9, "ttv_vs_cupynumeric": 4.0}
    higher, n = check.recorded_sizes(tmp_path)
    assert higher["ttm"] == (40, 80) and higher["ttv"] == (60, 0) and n == 4096
    assert higher["mttkrp"] == check.CHECK_SIZES["mttkrp"]  # not recorded: check's own
    baseline["quick"] = True  # a smoke run's baseline is no baseline
    (tmp_path / "suite_interleaved.json").write_text(json.dumps(interleaved))
    assert check.recorded_ratios(tmp_path) == {"ttm_vs_numpy": 0.55, "ttm_vs_cupynumeric": 2.8}
    assert check.recorded_sizes(tmp_path)[0]["ttm"] == (30, 90)


def test_the_quick_check_runs_small_sizes(check: ModuleType) -> None:
    quick = check.check_sizes(quick=True)
    assert set(quick) == set(check.KERNELS)
    assert all(q[0] * 10 <= full[0] + 10 for q, full in zip(quick.values(), check.check_sizes().values()))


def test_checks_pool_holds_one_kernel_at_a_time_with_room(check: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # check reads bench/suite.py's memory model
    from suite import child_memory  # type: ignore[import-not-found]

    sizes = check.check_sizes()
    pool = check.check_sysmem(sizes, 0)
    biggest = max(child_memory(k, "distal", *v)[0] + child_memory(k, "cupynumeric", *v)[0] for k, v in sizes.items())
    assert pool == 2 * biggest  # twice one kernel's two pools, not the sum over kernels
    assert pool < 2 * sum(child_memory(k, "distal", *v)[0] + child_memory(k, "cupynumeric", *v)[0]
                          for k, v in sizes.items())
    assert check.check_sysmem({}, 4096) == int(6 * 4096**2 * 8 / 2**20) + 512  # SUMMA's A, B, C and tiles
    assert 1000 <= check.check_sysmem(check.check_sizes(quick=True), 256) < pool
    assert check.check_need_mib(sizes, 0) > pool + 400**3 * 2 * 8 / 2**20  # the pool and innerprod's operands
