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
    out = capsys.readouterr().out
    assert "usage: distal [-h] [--version] COMMAND" in out
    for command in ("explain", "run", "redistribute", "reduce", "bench"):
        assert f"\n  {command} " in out
    assert main(["frobnicate"]) == 2
    assert "expected a command (explain, run, redistribute, reduce, bench), but found 'frobnicate'" in (
        capsys.readouterr().err)
    assert main([]) == 2
    assert "usage: distal" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import distal

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"distal {distal.__version__}\n"
    assert distal.__version__[0].isdigit()


@pytest.mark.parametrize("command", ["explain", "run", "redistribute", "reduce", "bench"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: distal {command}")
    assert "[]" not in out  # argparse choices once showed {[],matmul,...}


def test_a_usage_mistake_exits_2_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "A(i) = B(i)", "--frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "distal explain: unrecognized arguments: --frobnicate" in err and "usage: distal explain" in err


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


MATMUL = ["A(i,j) = B(i,k) * C(k,j)", "--shape", "A=8x8", "--shape", "B=8x8", "--shape", "C=8x8"]


def test_explain_takes_formats_and_dtypes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--grid", "2x2", "--format", "B=xy -> xy", "--format", "C=xy -> x0",
                 "--dtype", "float32", "--dtype", "A=float64"]) == 0
    out = capsys.readouterr().out
    assert "tensor A[8, 8] float64 output" in out
    assert "tensor B[8, 8] float32 format xy -> xy" in out
    assert "tensor C[8, 8] float32 format xy -> x0" in out


def test_explain_refuses_a_grid_without_an_algorithm_or_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--grid", "2x2"]) == 1
    assert ("expected --algorithm or --format with --grid 2x2 (the default schedule does not use a machine), "
            "but found neither for 'A(i,j) = B(i,k) * C(k,j)'") in capsys.readouterr().err
    assert main(["explain", *MATMUL, "--format", "B=xy -> xy"]) == 1
    assert "expected --grid with --format (the machine the formats name)" in capsys.readouterr().err


def test_explain_refuses_names_the_statement_does_not_use(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--shape", "D=4"]) == 1
    assert ("expected --shape names of tensors in the statement (A, B, C), but found 'D' in "
            "'A(i,j) = B(i,k) * C(k,j)'") in capsys.readouterr().err
    assert main(["explain", *MATMUL, "--grid", "2x2", "--format", "E=xy -> xy"]) == 1
    assert "expected --format names of tensors in the statement (A, B, C), but found 'E'" in capsys.readouterr().err
    assert main(["explain", *MATMUL, "--dtype", "Z=float32"]) == 1
    assert "expected --dtype names of tensors in the statement (A, B, C), but found 'Z'" in capsys.readouterr().err


def test_run_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('ran with', sys.argv[1:])\n")
    assert main(["run", str(script), "x", "y"]) == 0
    assert "ran with ['x', 'y']" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "missing.py")]) == 1
    assert "expected a Python script, but found no file" in capsys.readouterr().err


def test_run_passes_options_to_the_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "args.py"
    script.write_text("import sys\nprint('argv', sys.argv)\n")
    assert main(["run", str(script), "--help", "-n", "3"]) == 0
    assert f"argv {[str(script), '--help', '-n', '3']}" in capsys.readouterr().out


def test_bench_runs_the_gpu_benchmark_only_when_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import distal.cli as cli

    ran: list[str] = []
    monkeypatch.setattr(cli.subprocess, "call", lambda argv, cwd, env: ran.append(Path(argv[1]).name) or 0)
    assert main(["bench", "--results", str(tmp_path)]) == 0
    assert "gpu_gemm.py" not in ran and "matmul.py" in ran
    ran.clear()
    assert main(["bench", "gpu-gemm", "--results", str(tmp_path)]) == 0
    assert ran == ["gpu_gemm.py"]


def _fake_bench(folder: Path) -> Path:
    """A bench/ folder whose scripts record where they were told to write, and their arguments."""
    folder.mkdir()
    (folder / "_common.py").write_text("")
    for name in ("matmul.py", "launch_overhead.py"):
        (folder / name).write_text(
            "import os, sys\nfrom pathlib import Path\n"
            "out = Path(os.environ['DISTAL_BENCH_RESULTS'])\n"
            f"(out / '{name}.json').write_text(' '.join(sys.argv[1:]))\n"
            "print('step 1/1 done')\n"
        )
    return folder


def test_bench_writes_where_told_and_shows_progress(tmp_path: Path) -> None:
    bench = _fake_bench(tmp_path / "bench")
    results = tmp_path / "mine"
    done = subprocess.run([sys.executable, "-m", "distal.cli", "bench", "matmul", "launch", "--bench-dir", str(bench),
                           "--results", str(results), "--", "--quick"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (results / "matmul.py.json").read_text() == "--quick"
    assert (results / "launch_overhead.py.json").read_text() == "--quick"
    lines = done.stdout.splitlines()
    assert lines[0] == f"distal bench: 2 benchmark(s) from {bench}, results in {results}"
    assert lines[1].startswith("[1/2] matmul: matmul.py  (elapsed ")
    assert lines[2] == "step 1/1 done"
    assert lines[3].startswith("[2/2] launch: launch_overhead.py  (elapsed ")
    assert lines[-1].startswith("distal bench: done in ") and lines[-1].endswith(f"results in {results}")


def test_bench_defaults_to_the_user_cache_not_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _fake_bench(tmp_path / "bench")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "distal.cli", "bench", "matmul", "--bench-dir", str(bench)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cache" / "distal" / "bench" / "matmul.py.json").is_file()
    assert not (bench / "results").exists()


def test_bench_refuses_unknown_names_and_missing_scripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "matmull", "--results", str(tmp_path)]) == 1
    assert "expected benchmark names among matmul, suite," in capsys.readouterr().err
    assert main(["bench", "matmul", "--bench-dir", str(tmp_path), "--results", str(tmp_path)]) == 1
    assert f"expected distal's benchmark scripts (bench/ of a distal checkout), but found none in {tmp_path}" in (
        capsys.readouterr().err)


@pytest.mark.legate
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


@pytest.mark.parametrize("algorithm", ["auto", "cosma", "summa"])
def test_explain_picks_a_machine_of_four_processors_without_a_grid(algorithm: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *MATMUL, "--algorithm", algorithm]) == 0
    out = capsys.readouterr().out
    assert "Grid(2, 2" in out and "total received" in out


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    # `distal redistribute ... | head -1`: the reader is gone before distal prints; no traceback.
    read_end, write_end = os.pipe()
    os.close(read_end)
    done = subprocess.run(
        [sys.executable, "-m", "distal.cli", "redistribute", "[32{x,y}512, 128]", "[128{x}512, 32{y}128]",
         "--mesh", "x=4,y=4"],
        stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
    )
    os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141


def _placement_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("  placement (before the launches, by each tensor's format):")
    end = next(n for n in range(start + 1, len(lines)) if not lines[n].startswith("    "))
    return lines[start + 1:end]


@pytest.mark.parametrize("algorithm", [[], ["--algorithm", "summa"]])
def test_explain_placement_says_one_thing_per_tensor_as_plan_explain_does(
        algorithm: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # issue 25 item 3: B (formatted on the 2x2 grid, which the default schedule's one point does not use)
    # was listed both as "held by no processor" and as "read in place in its device blocks"
    import distal as dt

    assert main(["explain", *MATMUL, "--format", "B=xy -> xy", "--grid", "2x2", *algorithm]) == 0
    cli = _placement_section(capsys.readouterr().out)
    assert [line.split(":")[0].strip() for line in cli] == ["A", "B", "C"]
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = dt.Tensor("A", (8, 8)), dt.Tensor("B", (8, 8), dt.Format("xy -> xy", m)), dt.Tensor("C", (8, 8))
    dt.parse("A(i,j) = B(i,k) * C(k,j)", A=A, B=B, C=C)
    sched = dt.kernels.build("summa", m, A, B, C) if algorithm else A.schedule()
    assert cli == _placement_section(sched.compile().explain())
    if not algorithm:
        assert cli[1] == ("    B: read in place in its device blocks; its format xy -> xy places it on "
                          "Machine(Grid(2, 2)), not on the plan's machine (none: one point): no processor of the plan "
                          "holds it, so what a launch reads of it is counted as received (as from one global store "
                          "of 512 B)")
