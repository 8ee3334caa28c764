"""User errors of the command line, of pictures without matplotlib, and of the BLAS setting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import distal as dt
from distal.cli import main

MATMUL = ["A(i,j) = B(i,k) * C(k,j)", "--shape", "A=8x8", "--shape", "B=8x8", "--shape", "C=8x8"]


def test_explain_refuses_a_grid_it_would_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--grid", "2x2"]) == 1
    assert capsys.readouterr().err == (
        "distal explain: expected --algorithm or --format with --grid 2x2 (the default schedule does not use a "
        "machine), but found neither for 'A(i,j) = B(i,k) * C(k,j)'\n")


def test_explain_refuses_an_unused_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--shape", "D=4"]) == 1
    assert capsys.readouterr().err == (
        "distal explain: expected --shape names of tensors in the statement (A, B, C), but found 'D' in "
        "'A(i,j) = B(i,k) * C(k,j)'\n")


def test_explain_refuses_a_format_without_a_grid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--format", "B=xy -> xy"]) == 1
    assert "expected --grid with --format (the machine the formats name), but found none" in capsys.readouterr().err


def test_explain_refuses_a_malformed_format_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--grid", "2x2", "--format", "xy -> xy"]) == 1
    assert "expected NAME=VALUE for --format, but found 'xy -> xy'" in capsys.readouterr().err


def test_bench_refuses_an_unknown_benchmark(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["bench", "matmull", "--results", str(tmp_path)]) == 1
    assert "distal bench: expected benchmark names among matmul, suite, einsum, redist" in capsys.readouterr().err


def test_pictures_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    from distal.format.picture import draw

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(dt.DistalError, match=r"expected matplotlib to draw pictures, but found it is not "
                                             r"installed; install it with `pip install matplotlib`"):
        draw(dt.Format("x -> x", dt.Machine(dt.Grid(2))), (4,), "unused.png")


def test_blas_threads_per_task_must_be_positive() -> None:
    from distal.runtime import _blas

    with pytest.raises(dt.DistalError, match=r"expected a positive number of BLAS threads per task or None, "
                                             r"but found -1"):
        _blas.set_task_threads(-1)


def test_a_bad_tile_blas_setting_is_refused_when_the_plan_is_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    from distal import tile_blas

    monkeypatch.setenv("DISTAL_TILE_BLAS", "Skylake X")
    monkeypatch.setattr(tile_blas, "_loaded", [])  # not chosen yet in this process
    monkeypatch.setattr(tile_blas, "_why", [])
    i, j, k = dt.index_vars("i j k")
    A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    with pytest.raises(dt.DistalError) as info:
        A.schedule().substitute([i, j, k], dt.leaf.GEMM).compile()
    assert str(info.value) == ("expected DISTAL_TILE_BLAS to be auto, numpy or an OpenBLAS core type such as "
                               "SkylakeX, but found 'Skylake X'")
