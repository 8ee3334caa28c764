"""bench/suite.py's runner: hangs, memory, sizes, the interleaving of children, its JSON (no timing assertions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # suite.py imports the harness, bench/_common
    spec = importlib.util.spec_from_file_location("bench_suite", BENCH / "suite.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_suite"] = module
    spec.loader.exec_module(module)
    return module


def test_legate_pools_grow_with_the_problem(suite: ModuleType) -> None:
    sizes = [suite.sweep_sysmem(n) for n in (256, 1024, 2048, 4096)]
    assert sizes == sorted(sizes) and sizes[0] >= 1000
    assert sizes[-1] * 2**20 >= 24 * 4096 * 4096 * 8  # room for the operands of the sweep's plans at n = 4096
    assert suite.sweep_sysmem(4096) < 12000  # well under the single process's old pool


# -- the higher-order kernels: one child per system and round ------------------------------------


def test_each_childs_memory_covers_what_its_system_holds(suite: ModuleType) -> None:
    gib = 2**30 / 2**20
    for system in suite.SYSTEMS:
        sysmem, need = suite.child_memory("ttv", system, 600, 0)
        operand = 600**3 * 8 / 2**20
        assert need >= operand + sysmem  # the host array (or the pool, fully touched) and the pool
        bigger = suite.child_memory("ttv", system, 900, 0)
        assert bigger[0] >= sysmem and bigger[1] > need
    # distal's pool holds the placed operands and the largest once more while it is placed
    sysmem, _ = suite.child_memory("innerprod", "distal", 500, 0)
    assert sysmem >= 3 * 500**3 * 8 / 2**20
    # cuPyNumeric's pool holds its operands and twice TTM's output
    sysmem, _ = suite.child_memory("ttm", "cupynumeric", 300, 900)
    assert sysmem >= (300**3 + 300 * 900 + 2 * 300 * 300 * 900) * 8 / 2**20
    # NumPy has no pool, and needs more for MTTKRP's n*n*l intermediate than for its operands alone
    sysmem, need = suite.child_memory("mttkrp", "numpy", 400, 128)
    assert sysmem == 0 and need > (400**3 + 2 * 400 * 128) * 8 / 2**20 + 400 * 400 * 128 * 8 / 2**20
    assert suite.child_memory("ttv", "distal", 900, 0)[1] > 16 * gib  # why TTV cannot share one process
    with pytest.raises(ValueError, match="expected a system"):
        suite.child_memory("ttv", "torch", 10, 0)


def test_sizes_scale_numpys_calibration_time_to_the_target(suite: ModuleType) -> None:
    # 0.025 s at n = 300 -> 8x the work for 0.2 s -> n = 600 (a cube root: work grows as n^3)
    row = suite.choose_size("ttv", (300, 0), 0.025, 0.2, available_mib=1e9)
    assert row["size"] == [600, 0] and row["wanted_n"] == 600 and not row["capped_by_memory"]
    assert row["predicted_numpy_s"] == pytest.approx(0.2)
    assert row["calibration_numpy_s"] == 0.025 and row["target_numpy_s"] == 0.2
    # rounded up to a multiple of the step; l is kept
    assert suite.choose_size("ttm", (150, 900), 0.05, 0.2, 1e9)["size"] == [240, 900]
    # never below the calibration size, even when NumPy is already slower than the target there
    assert suite.choose_size("mttkrp", (200, 128), 5.0, 0.2, 1e9)["size"] == [200, 128]


def test_sizes_are_lowered_until_every_systems_child_fits(suite: ModuleType) -> None:
    budget = suite.child_memory("ttv", "distal", 700, 0)[1]  # distal's child needs the most
    row = suite.choose_size("ttv", (300, 0), 0.025, 0.2, available_mib=budget)
    assert row["size"] == [600, 0] and not row["capped_by_memory"]
    row = suite.choose_size("ttv", (300, 0), 0.001, 0.2, available_mib=budget)
    assert row["size"] == [700, 0] and row["wanted_n"] > 700 and row["capped_by_memory"]
    assert suite.largest_fitting("ttv", 0, budget - 1, 2000) == 690
    assert all(suite.child_memory("ttv", s, 700, 0)[1] <= budget for s in suite.SYSTEMS)
    assert suite.largest_fitting("ttv", 0, 10.0, 2000) == 0  # nothing fits: the runner refuses


def test_each_round_runs_every_system_once_in_a_rotated_order(suite: ModuleType) -> None:
    systems = suite.SYSTEMS
    orders = [suite.round_order(systems, r) for r in range(5)]
    assert orders[0] == list(systems) and orders[3] == orders[0]
    assert all(sorted(o) == sorted(systems) for o in orders)
    assert {o[0] for o in orders[:3]} == set(systems)  # each system goes first in one of three rounds
    plan = suite.higher_plan({"ttv": (40, 0), "ttm": (20, 30)}, 2)
    assert [(j["kernel"], j["round"], j["system"]) for j in plan] == [
        ("ttv", 0, "numpy"), ("ttv", 0, "distal"), ("ttv", 0, "cupynumeric"),
        ("ttv", 1, "distal"), ("ttv", 1, "cupynumeric"), ("ttv", 1, "numpy"),
        ("ttm", 0, "numpy"), ("ttm", 0, "distal"), ("ttm", 0, "cupynumeric"),
        ("ttm", 1, "distal"), ("ttm", 1, "cupynumeric"), ("ttm", 1, "numpy")]
    assert all((j["sysmem"], j["need_mib"]) == suite.child_memory(j["kernel"], j["system"], *j["size"])
               for j in plan)


def fake_child(calls: list[tuple[list[str], dict[str, str]]]) -> object:
    """A stand-in for `_child` that records its calls and answers as a sample child would."""
    seconds = {"numpy": 0.2, "distal": 0.1, "cupynumeric": 0.4, "numpy_avx512": 0.15}

    def child(args: list[str], env: dict[str, str], timeout: float | None = None) -> dict[str, object]:
        calls.append((args, env))
        system = args[args.index("--sample-child") + 1]
        print_ = [10.0, 1.0] if system != "cupynumeric" else [10.0, 1.5]
        return {"seconds": [seconds[system] * (1 + len(calls) / 1000)], "setup_s": 0.5, "fingerprint": print_,
                "peak_rss_mib": 100.0}

    return child


def test_the_runner_runs_the_children_in_the_planned_order_and_records_its_json_fields(
        suite: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(suite, "_child", fake_child(calls))
    monkeypatch.setattr(suite, "higher_systems", lambda: suite.SYSTEMS)
    steps: list[str] = []
    out = suite.run_higher({"mttkrp": (30, 8)}, 3, 60.0, steps.append)
    systems = [a[a.index("--sample-child") + 1] for a, _ in calls]
    assert systems == [*suite.round_order(suite.SYSTEMS, 0), *suite.round_order(suite.SYSTEMS, 1),
                       *suite.round_order(suite.SYSTEMS, 2)]
    assert all(a[a.index("--shape") + 1:a.index("--shape") + 3] == ["30", "8"] for a, _ in calls)
    for args, env in calls:  # NumPy without Legate and with 2 BLAS threads; Legate children on 2 CPUs
        system = args[args.index("--sample-child") + 1]
        if system == "numpy":
            assert "LEGATE_CONFIG" not in env and env["OPENBLAS_NUM_THREADS"] == "2"
        else:
            sysmem = suite.child_memory("mttkrp", system, 30, 8)[0]
            assert env["LEGATE_CONFIG"] == f"--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"
    assert len(out["all"]["mttkrp:distal"]) == 3 and len(steps) == 9
    assert out["ratios"]["mttkrp_vs_numpy"] == pytest.approx(2.0, rel=0.02)
    assert out["ratios"]["mttkrp_vs_cupynumeric"] == pytest.approx(4.0, rel=0.02)
    assert out["numpy_seconds"]["mttkrp"] == pytest.approx(0.2, rel=0.02)
    assert out["numpy_at_least_0_1s"] == {"mttkrp": True}
    assert out["max_rel_error_vs_numpy"]["mttkrp"] == {"distal": 0.0, "cupynumeric": pytest.approx(0.05)}
    assert [c["round"] for c in out["children"]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert {"system", "sysmem", "need_mib", "peak_rss_mib", "setup_s", "wall_s", "seconds"} <= set(out["children"][0])
    json.dumps(out)  # the results file takes it as it is


def test_numpy_under_a_tenth_of_a_second_is_flagged(suite: ModuleType) -> None:
    samples = {"ttv:numpy": [0.09, 0.08, 0.3], "ttv:distal": [0.1], "ttv:cupynumeric": [0.5]}
    prints = {"ttv": {"numpy": [1.0, 2.0], "distal": [1.0, 2.0]}}
    out = suite.summarise_higher(samples, prints)
    assert out["numpy_seconds"] == {"ttv": 0.09} and out["numpy_at_least_0_1s"] == {"ttv": False}


def test_the_runner_refuses_a_child_that_does_not_fit_before_it_starts(
        suite: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(suite, "_child", fake_child(calls))
    import _common.host  # type: ignore[import-not-found]

    monkeypatch.setattr(_common.host, "available_mib", lambda: 1000.0)
    with pytest.raises(MemoryError, match=r"expected at least \d+ MiB .* for ttv \(900, 0\) round 1/5 numpy"):
        suite.run_higher({"ttv": (900, 0)}, 5, 60.0, print)
    assert calls == []


def test_fingerprints_tell_results_apart(suite: ModuleType) -> None:
    import numpy as np

    a = np.arange(24.0).reshape(2, 3, 4)
    same = suite.fingerprint(a.copy())
    assert suite.fingerprint_error(same, suite.fingerprint(a)) == 0.0
    b = a.copy()
    b.flat[-1] += 1.0
    assert suite.fingerprint_error(suite.fingerprint(b), same) > 0.0
    assert suite.fingerprint(np.float64(3.0)) == [3.0, 3.0]  # innerprod's 0-d result


def test_a_numpy_sample_child_times_one_run_after_a_warm_up(suite: ModuleType) -> None:
    import numpy as np

    out = suite.sample_child("numpy", "ttm", 6, 5, warmup=1, samples=2)
    assert len(out["seconds"]) == 2 and out["size"] == [6, 5]
    from _common.workloads import operand  # type: ignore[import-not-found]

    b, c = (operand("ttm", 6, 5, k) for k in range(2))
    assert out["fingerprint"] == suite.fingerprint(np.einsum("ijk,kl->ijl", b, c, optimize=True))
    assert not np.array_equal(b[0, 0], operand("ttm", 6, 5, 0, seed=1)[0, 0])


@pytest.mark.legate
@pytest.mark.cupynumeric  # a child imports cuPyNumeric
def test_distal_and_cupynumeric_children_compute_numpys_result(suite: ModuleType) -> None:
    prints = {}
    for system in suite.SYSTEMS:
        sysmem = suite.child_memory("mttkrp", system, 12, 5)[0]
        env = suite.numpy_env() if system == "numpy" else suite.legate_env(max(sysmem, 500))
        part = suite._child(["--sample-child", system, "--kernels", "mttkrp", "--shape", "12", "5"], env,
                            timeout=300.0)
        assert len(part["seconds"]) == 1 and part["peak_rss_mib"] > 0
        prints[system] = part["fingerprint"]
    assert suite.fingerprint_error(prints["distal"], prints["numpy"]) < 1e-12
    assert suite.fingerprint_error(prints["cupynumeric"], prints["numpy"]) < 1e-12


def test_numpy_with_the_avx512_kernels_runs_where_distals_tiles_use_them(
        suite: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(suite, "_child", fake_child(calls))
    monkeypatch.setattr(suite, "higher_systems", lambda: (*suite.SYSTEMS, suite.NUMPY_AVX512))
    out = suite.run_higher({"ttm": (30, 8)}, 2, 60.0, lambda _: None)
    envs = {args[args.index("--sample-child") + 1]: env for args, env in calls}
    assert set(envs) == {"numpy", "distal", "cupynumeric", "numpy_avx512"} and len(calls) == 8
    assert envs["numpy_avx512"]["OPENBLAS_CORETYPE"] == "SkylakeX" and "LEGATE_CONFIG" not in envs["numpy_avx512"]
    assert "OPENBLAS_CORETYPE" not in envs["numpy"]
    assert out["ratios"]["ttm_vs_numpy_avx512"] == pytest.approx(1.5, rel=0.02)
    assert suite.child_memory("ttm", "numpy_avx512", 30, 8) == suite.child_memory("ttm", "numpy", 30, 8)


def test_what_was_measured_is_recorded_after_each_child(suite: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    answer = fake_child(calls)

    def fails_fifth(args: list[str], env: dict[str, str], timeout: float | None = None) -> object:
        if len(calls) == 4:
            raise RuntimeError("child failed")
        return answer(args, env, timeout)  # type: ignore[operator]

    monkeypatch.setattr(suite, "_child", fails_fifth)
    monkeypatch.setattr(suite, "higher_systems", lambda: suite.SYSTEMS)
    kept: list[dict[str, object]] = []
    with pytest.raises(RuntimeError, match="child failed"):
        suite.run_higher({"ttv": (30, 0)}, 2, 60.0, lambda _: None, kept.append)
    assert [len(k["children"]) for k in kept] == [1, 2, 3, 4]  # type: ignore[arg-type]
    assert kept[-1]["all"]["ttv:distal"] and kept[-1]["ratios"]  # type: ignore[index]
