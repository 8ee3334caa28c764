"""The `distal` command line: dispatch, explain, run, and its errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from distal.cli import main


def test_help_and_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "commands: explain, run, redistribute, reduce, bench" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert "expected a command (explain, run, redistribute, reduce, bench), but found 'frobnicate'" in (
        capsys.readouterr().err)


def test_explain_an_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "A(i,j) = B(i,k) * C(k,j)", "--shape", "A=8x8", "--shape", "B=8x8",
                 "--shape", "C=8x8", "--algorithm", "cannon", "--grid", "2x2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "rotate(ko, {io, jo}, kos)" in out
    assert "total received" in out


def test_explain_the_default_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "a = B(i) * C(i)", "--shape", "a=()", "--shape", "B=5", "--shape", "C=5"]) == 0
    assert "∀i a += B(i) * C(i)" in capsys.readouterr().out


def test_explain_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "A(i) = B(i)", "--shape", "A=4", "--shape", "B"]) == 1
    assert "expected NAME=AxBx... for --shape, but found 'B'" in capsys.readouterr().err
    assert main(["explain", "A(i) = Q(i)", "--shape", "A=4"]) == 1
    assert "expected a known tensor (given: A), but found 'Q'" in capsys.readouterr().err


def test_run_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('ran with', sys.argv[1:])\n")
    assert main(["run", str(script), "x", "y"]) == 0
    assert "ran with ['x', 'y']" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "missing.py")]) == 1
    assert "expected a Python script, but found no file" in capsys.readouterr().err


def test_bench_runs_the_gpu_benchmark_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import distal.cli as cli

    ran: list[str] = []
    monkeypatch.setattr(cli.subprocess, "call", lambda argv, cwd: ran.append(Path(argv[1]).name) or 0)
    assert main(["bench"]) == 0
    assert "gpu_gemm.py" not in ran and "matmul.py" in ran
    ran.clear()
    assert main(["bench", "gpu-gemm"]) == 0
    assert ran == ["gpu_gemm.py"]


def test_the_gpu_benchmark_says_why_it_records_nothing_without_gpus() -> None:
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "LEGATE_CONFIG"}
    env["LEGATE_CONFIG"] = "--cpus 1 --gpus 0 --sysmem 1000"
    before = sorted((root / "bench" / "results").glob("gpu_gemm*"))
    done = subprocess.run([sys.executable, str(root / "bench" / "gpu_gemm.py"), "-n", "8"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "Legate runs no GPU processors" in done.stderr and "Nothing recorded" in done.stderr
    assert sorted((root / "bench" / "results").glob("gpu_gemm*")) == before
