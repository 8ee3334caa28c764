"""bench/einsum.py: its statements, NumPy methods, sizing and the record of a --quick run (no timing asserted)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from distal.cli import _ONLY_WHEN_NAMED, BENCHES

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # einsum.py imports the harness, bench/_common
    spec = importlib.util.spec_from_file_location("bench_einsum", BENCH / "einsum.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_einsum"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_distal_bench_runs_it_by_name() -> None:
    assert BENCHES["einsum"] == "einsum.py" and (BENCH / "einsum.py").is_file()
    assert "einsum" not in _ONLY_WHEN_NAMED


def test_the_suite_has_the_issues_statements_of_distinct_shapes(bench: ModuleType) -> None:
    assert sorted(bench.STATEMENTS) == sorted(NAMES)
    specs = [s.spec for s in bench.STATEMENTS.values()]
    assert len(specs) >= 12 and len(set(specs)) == len(specs)
    for wanted in ("abij,cdij->abcd", "bik,bkj->bij", "ij,jk,kl->il", "ijk,jl->ilk", "ijk,ir,kr->jr",
                   "abc,cde,efa->bdf", "i,j->ij", "ij->i", "ij->j", "ij,j->ij", "ij,ij->", "i,i->"):
        assert wanted in specs
    frobenius = next(s for s in bench.STATEMENTS.values() if s.spec == "ij,ij->")
    x, y = bench.operands(frobenius, 5)
    assert x.dtype == np.complex128 and np.array_equal(y, np.conj(x))


NAMES = ["contract4", "batched_matmul", "chain3", "ttm_mid", "mttkrp_mid", "triangle", "outer", "row_sums", "col_sums",
         "broadcast", "frobenius", "inner", "matmul", "ttv", "bilinear"]


@pytest.mark.parametrize("name", NAMES)
def test_every_numpy_method_computes_the_statement(bench: ModuleType, name: str) -> None:
    stmt = bench.STATEMENTS[name]
    arrays = bench.operands(stmt, stmt.quick)
    expected = np.einsum(stmt.spec, *arrays)
    methods = {**bench.numpy_methods(stmt), **stmt.reference}
    assert len(methods) >= 2 + len(stmt.direct)
    for method, fn in methods.items():
        got = np.asarray(fn(*arrays))
        assert got.shape == expected.shape, method
        assert np.allclose(got, expected), method
    assert expected.shape == stmt.out_shape(stmt.quick)


def test_sizes_scale_numpys_time_by_the_work_exponent_within_memory(bench: ModuleType) -> None:
    matmul = bench.STATEMENTS["matmul"]  # work n ** 3
    n, capped = bench.choose_n(matmul, 1000, 0.025, 0.2, 1e9)
    assert n == 2048 and not capped  # twice the size for eight times the time, rounded up to the step (64)
    assert bench.choose_n(matmul, 1000, 5.0, 0.2, 1e9)[0] == matmul.base  # never below the calibration size
    n, capped = bench.choose_n(matmul, 1000, 0.025, 0.2, 1500.0)
    assert capped and n < 2048 and bench.fits(matmul, n, 1500.0) and not bench.fits(matmul, n + matmul.step, 1500.0)
    inner = bench.STATEMENTS["inner"]  # work n
    assert bench.choose_n(inner, 1 << 23, 0.02, 0.2, 1e9)[0] == 10 * (1 << 23)


def test_each_childs_memory_covers_what_it_holds(bench: ModuleType) -> None:
    stmt = bench.STATEMENTS["broadcast"]
    operand = 8192 * 8192 * 8 / 2**20
    for system in bench.SYSTEMS:
        _, need = bench.child_memory(stmt, 8192, system)
        assert need >= 2 * operand  # its operand and the output at least
        assert bench.child_memory(stmt, 16384, system)[1] > need
    assert bench.child_memory(stmt, 8192, "numpy")[0] == 0  # no Legate pool
    assert bench.child_memory(stmt, 8192, "distal")[0] >= 3 * operand  # placed twice, one output
    with pytest.raises(ValueError, match="expected a system"):
        bench.child_memory(stmt, 10, "torch")


def test_fingerprints_compare_complex_results(bench: ModuleType) -> None:
    z = np.array([1 + 2j, 3 - 1j])
    assert bench.fingerprint(z)[:2] == [4.0, 1.0]  # the sum's real and imaginary parts
    assert bench.fingerprint_error(bench.fingerprint(z), bench.fingerprint(z)) == 0.0
    assert bench.fingerprint_error(bench.fingerprint(z * 1.5), bench.fingerprint(z)) > 0.1
    assert bench.fingerprint(np.float64(2.0)) == [2.0, 2.0]


@pytest.mark.legate
@pytest.mark.slow
@pytest.mark.cupynumeric  # the run's children import cuPyNumeric
def test_a_quick_run_records_every_statement_and_section(bench: ModuleType, tmp_path: Path) -> None:
    env = {**os.environ, "DISTAL_BENCH_RESULTS": str(tmp_path)}
    env.pop("LEGATE_CONFIG", None)
    done = subprocess.run([sys.executable, str(BENCH / "einsum.py"), "--quick"], cwd=BENCH.parent, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [path] = tmp_path.glob("*/einsum_quick.json")
    rec = json.loads(path.read_text())
    assert rec["complete"] and rec["quick"] and rec["rounds"] == 1 and not rec.get("failures")
    assert {"cpu", "blas", "cpu_model"} <= set(rec["machine"]) and rec["commit"]
    assert {"numpy", "distal", "cupynumeric"} <= set(rec["blas"])
    STATEMENTS = bench.STATEMENTS  # the fixture loads the script (this test may run alone)

    assert set(rec["statements"]) == set(STATEMENTS)
    for name, row in rec["statements"].items():
        secs = row["seconds"]
        for key in ("distal", "distal_from_numpy", "one_processor", "schedule_auto", "cupynumeric"):
            assert key in secs, (name, key)
        for method in ("numpy.einsum", "opt_einsum", *STATEMENTS[name].direct):
            assert f"numpy:{method}" in secs or method in row["sizing"]["skipped_methods"], (name, method)
        assert row["best_numpy"] in {k.split(":", 1)[1] for k in secs if k.startswith("numpy:")}
        assert row["vs_best_numpy"] > 0 and row["vs_cupynumeric"] > 0 and row["one_processor_over_distal"] > 0
        for who in ("distal", "distal_from_numpy", "schedule_auto"):
            choice = row["choices"][who]
            assert choice["auto"].startswith("auto: chose") and choice["leaf"], (name, who)
            assert choice["processors_idle"] == (1 if "processor(s) idle" in choice["auto"] else 0)
        assert max(row["max_rel_error_vs_opt_einsum"].values()) < 1e-6, name
    assert set(rec["library"]) == {"matmul", "ttv", "innerprod", "ttm", "mttkrp"}
    matmul = rec["library"]["matmul"]
    assert {"summa", "cannon", "pumma", "johnson", "solomonik", "cosma", "auto"} == set(matmul["seconds"])
    assert matmul["best_library"] in matmul["seconds"] and matmul["auto_over_best_library"] > 0
    assert max(max(r["max_rel_error"].values()) for r in rec["library"].values()) < 1e-9
    c40 = rec["contract4_40"]
    assert {"einsum", "default_one_task", "schedule_auto"} == set(c40["seconds"])
    assert c40["issue_before_s"] == [3.8, 4.3] and c40["einsum_speedup_vs_default_one_task"] > 0
