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


AVX2 = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
AVX512 = AVX2.replace("25", "26").replace("fma", "fma avx512f avx512bw avx512vl avx512dq avx512cd")


def _record(folder: Path, day: str, name: str, cpuinfo: str, data: dict[str, Any]) -> None:
    """A dated record as bench/_common.record writes it, measured on the CPU `cpuinfo` describes."""
    from _common import cpu  # type: ignore[import-not-found]

    (folder / f"{day}_abc1234").mkdir(exist_ok=True)
    (folder / f"{day}_abc1234" / f"{name}.json").write_text(json.dumps(
        {"machine": {"cpu": cpu(cpuinfo)}, "recorded": f"{day} 12:00:00", **data}))


def _suite(ratios: dict[str, float], sizes: dict[str, list[int]], quick: bool = False) -> dict[str, Any]:
    return {"higher": {"ratios": {"ttm_vs_numpy": 9.0}},  # the suite's own sizes: not check's baseline
            "check": {"sizes": sizes, "rounds": 5, "quick": quick, "ratios": ratios}}


def test_a_run_is_compared_with_the_newest_baseline_from_its_kind_of_cpu(check: ModuleType, tmp_path: Path) -> None:
    from _common import cpu, cpu_kind  # type: ignore[import-not-found]

    avx2, avx512 = cpu_kind({"cpu": cpu(AVX2)}), cpu_kind({"cpu": cpu(AVX512)})
    assert avx2 != avx512 and "avx2" in avx2 and "avx512f" in avx512
    assert cpu_kind({"cpu": cpu(AVX2.replace("model\t\t: 1", "model\t\t: 17"))}) == avx2  # another model: alike
    _record(tmp_path, "2026-01-01", "suite_interleaved", AVX2, _suite({"ttm_vs_numpy": 0.7}, {"ttm": [40, 80]}))
    _record(tmp_path, "2026-02-01", "suite_interleaved", AVX2, _suite({"ttm_vs_numpy": 0.9, "ttv_vs_cupynumeric": 4.0},
                                                                      {"ttm": [40, 80], "ttv": [60, 0]}))
    _record(tmp_path, "2026-03-01", "suite_interleaved", AVX2, _suite({"ttm_vs_numpy": 5.0}, {}, quick=True))
    _record(tmp_path, "2026-04-01", "suite_interleaved", AVX512, _suite({"ttm_vs_numpy": 1.9}, {"ttm": [50, 90]}))
    _record(tmp_path, "2026-02-02", "matmul", AVX2, {"n": 1024, "numpy": {"seconds": 1.5},
                                                      "distal": {"summa_2x2_chunk4096": {"seconds": 1.0}}})
    base = check.recorded(avx2, tmp_path)  # the newest full run from this kind: not the quick one, not AVX-512's
    assert base.ratios == {"ttm_vs_numpy": 0.9, "ttv_vs_cupynumeric": 4.0, "summa_vs_numpy": 1.5}
    assert base.higher["ttm"] == (40, 80) and base.higher["ttv"] == (60, 0) and base.matmul_n == 1024
    assert base.higher["mttkrp"] == check.CHECK_SIZES["mttkrp"]  # not recorded: check's own
    assert len(base.sources) == 2 and all("2026-02-0" in where for where in base.sources)
    assert check.recorded(avx512, tmp_path).ratios == {"ttm_vs_numpy": 1.9}
    assert check.recorded_kinds(tmp_path) == [avx512, avx2]


def test_a_kind_of_cpu_without_a_record_has_no_baseline(check: ModuleType, tmp_path: Path) -> None:
    from _common import cpu, cpu_kind  # type: ignore[import-not-found]

    _record(tmp_path, "2026-04-01", "suite_interleaved", AVX512, _suite({"ttm_vs_numpy": 1.9}, {"ttm": [50, 90]}))
    base = check.recorded(cpu_kind({"cpu": cpu(AVX2)}), tmp_path)
    assert base.ratios == {} and base.sources == () and base.higher == check.check_sizes()


def test_the_checkouts_history_keeps_the_avx512_baseline(check: ModuleType) -> None:
    history = json.loads((BENCH / "results" / "history.json").read_text())
    kinds = {r["data"]["machine"]["cpu"]["kind"] for r in history["records"]}
    assert len(kinds) == 1
    base = check.recorded(kinds.pop())
    assert {f"{k}_vs_{w}" for k in check.KERNELS for w in check.AGAINST} | {"summa_vs_numpy"} <= set(base.ratios)
    assert all("history.json" in where for where in base.sources)


def test_the_quick_check_runs_small_sizes(check: ModuleType) -> None:
    quick = check.check_sizes(quick=True)
    assert set(quick) == set(check.KERNELS)
    assert all(q[0] * 10 <= full[0] + 10 for q, full in zip(quick.values(), check.check_sizes().values()))


def test_checks_pool_holds_one_kernel_at_a_time_with_room(check: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # check reads the harness's memory model of the kernels
    from _common.workloads import child_memory  # type: ignore[import-not-found]

    sizes = check.check_sizes()
    pool = check.check_sysmem(sizes, 0)
    biggest = max(child_memory(k, "distal", *v)[0] + child_memory(k, "cupynumeric", *v)[0] for k, v in sizes.items())
    assert pool == 2 * biggest  # twice one kernel's two pools, not the sum over kernels
    assert pool < 2 * sum(child_memory(k, "distal", *v)[0] + child_memory(k, "cupynumeric", *v)[0]
                          for k, v in sizes.items())
    assert check.check_sysmem({}, 4096) == int(6 * 4096**2 * 8 / 2**20) + 512  # SUMMA's A, B, C and tiles
    assert 1000 <= check.check_sysmem(check.check_sizes(quick=True), 256) < pool
    assert check.check_need_mib(sizes, 0) > pool + 400**3 * 2 * 8 / 2**20  # the pool and innerprod's operands
