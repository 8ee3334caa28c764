"""The `distal` command line: explain, run, redistribute, reduce, bench.

    distal explain "A(i,j) = B(i,k) * C(k,j)" --shape A=1000x1000 --shape B=1000x1000 \\
                   --shape C=1000x1000 --algorithm summa --grid 2x2
    distal run script.py [args...]
    distal redistribute "[32{x,y}512, 128]" "[128{x}512, 32{y}128]" --mesh x=4,y=4
    distal reduce --system a100x2 --axes 32 --reduce 0
    distal bench [matmul suite ...] [--results DIR]

`distal COMMAND --help` describes each command; `distal --version` prints the version.
"""

from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from distal.errors import DistalError

__all__ = ["COMMANDS", "main"]

# Every script in bench/ (they share bench/_common, the harness, and never import one another).
BENCHES = {
    "matmul": "matmul.py",  # SUMMA and Cannon against numpy.matmul and cupynumeric.matmul at n = 4096
    "suite": "suite.py",  # the library's algorithms and TTV, innerprod, TTM, MTTKRP against NumPy, cuPyNumeric
    "einsum": "einsum.py",  # dt.einsum with no schedule against NumPy and cuPyNumeric (issue 26's targets)
    "redist": "redist_synthesis.py",  # synthesized redistributions against the naive gather-then-slice
    "reduction": "reduction_synthesis.py",  # synthesized reduction programs on hierarchical systems
    "redist-legate": "redist_legate.py",  # synthesized and naive redistributions run on Legate (4 CPUs)
    "launch": "launch_overhead.py",  # per-launch overhead of distal's runtime primitives
    "kernel-modes": "kernel_modes.py",  # task bodies' slice mode against index mode (NumPy executor)
    "import-time": "import_time.py",  # how long `import distal` takes in a fresh interpreter
    "parallelize": "parallelize.py",  # what parallelize's cpu_vector and cpu_thread change inside tasks
    "reference-oracle": "reference_oracle.py",  # the reference executor on the tutorial's SUMMA, n = 1024
    "validate-model": "validate_model.py",  # predicted vs measured time (distal.model) at 1, 2, 4 CPUs
    "validate-comm": "validate_comm.py",  # the same where data movement dominates, at 1 and 2 CPUs
    "runtime-costs": "runtime_costs.py",  # the runtime's costs as launches grow to 512 points, and the overlap
    "weak-scaling": "weak_scaling.py",  # the paper's weak scaling to 256 nodes, predicted (no data)
    "ranks": "ranks.py",  # when named: 1 rank x 2 CPUs against 2 ranks x 1 CPU (builds the legate 26.1 environment)
    "rank-traffic": "rank_traffic.py",  # when named: explain()'s bytes between ranks against Legion's profile (2 ranks)
    "gpu-gemm": "gpu_gemm.py",  # needs GPUs: run only when named
    "gpu-checks": "gpu_checks.py",  # needs GPUs: every check on GPU processors equal to NumPy (one rank)
    "gpu-reduce-repro": "gpu_reduce_repro.py",  # needs GPUs: a reduction over GPU points, run many times
    "check": "check.py",  # reruns the tracked ratios and compares them with bench/results/ (exit 1: one fell)
    "breakdown": "breakdown.py",  # diagnosis, when named: where every millisecond of a small plan goes
    "fixed-cost": "fixed_cost.py",  # diagnosis, when named: fixed cost of a plan (=, +=) and of a task point
    "profile-higher": "profile_higher.py",  # diagnosis, when named: TTV, innerprod, TTM, MTTKRP run by run
    "leaf-timeline": "leaf_timeline.py",  # diagnosis, when named: when each leaf GEMM runs, per processor thread
    "blas-pools": "blas_pools.py",  # diagnosis, when named: dt.einsum's eager GEMM alone and right after NumPy's
    "host-pages": "host_pages.py",  # when named: copies, new pages and read-backs to 1 GiB, float32 GEMM's rate
    "report": "report.py",  # when named: prints docs/benchmarks.md's tables from the records (measures nothing)
}
_ONLY_WHEN_NAMED = {"gpu-gemm", "gpu-checks", "gpu-reduce-repro", "check", "breakdown", "fixed-cost", "profile-higher",
                    "report", "ranks", "rank-traffic", "leaf-timeline", "blas-pools", "host-pages"}
# bench/_common.py and bench/import_time.py read it: where results are written.
RESULTS_ENV = "DISTAL_BENCH_RESULTS"


class _Parser(argparse.ArgumentParser):
    """argparse that raises a DistalError for usage mistakes (main prints it, exit status 2)."""

    def error(self, message: str) -> Any:
        raise _UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")


class _UsageError(DistalError):
    pass


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = text.partition("=")
    if not name or not dims:
        raise DistalError(f"expected NAME=AxBx... for --shape, but found {text!r}")
    try:
        return name, tuple(int(d) for d in dims.split("x")) if dims != "()" else ()
    except ValueError:
        raise DistalError(f"expected integer extents in --shape, but found {text!r}") from None


def _grid(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.split("x"))
    except ValueError:
        raise DistalError(f"expected a grid such as 2x2, but found {text!r}") from None
    if not dims or any(d < 1 for d in dims):
        raise DistalError(f"expected positive grid extents such as 2x2, but found {text!r}")
    return dims


def _named(flag: str, text: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    if not eq or not name.strip() or not value.strip():
        raise DistalError(f"expected NAME=VALUE for {flag}, but found {text!r}")
    return name.strip(), value.strip()


def _check_names(flag: str, given: dict[str, Any], used: list[str], statement: str) -> None:
    unused = [name for name in given if name not in used]
    if unused:
        raise DistalError(
            f"expected {flag} names of tensors in the statement ({', '.join(used)}), "
            f"but found {', '.join(repr(n) for n in unused)} in {statement!r}"
        )


def _explain_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="distal explain",
        description="Compile a statement (with a library algorithm, or the default schedule) and print its "
        "schedule and plan: launches, tiles, bytes received per processor, peak memory. Nothing runs on Legate.",
        epilog='example: distal explain "A(i,j) = B(i,k) * C(k,j)" --shape A=8x8 --shape B=8x8 --shape C=8x8 '
        '--algorithm summa --grid 2x2',
    )
    p.add_argument("statement", help='index notation, e.g. "A(i,j) = B(i,k) * C(k,j)"')
    p.add_argument("--shape", action="append", default=[], metavar="NAME=AxB",
                   help="a tensor's shape (every tensor of the statement needs one; () for a scalar)")
    p.add_argument("--dtype", action="append", default=[], metavar="[NAME=]DTYPE",
                   help="element type of every tensor (e.g. float32) or of one (B=float32); default float64")
    p.add_argument("--format", action="append", default=[], metavar='NAME="SPEC"',
                   help='a tensor\'s distribution on the --grid machine, e.g. B="xy -> xy"')
    p.add_argument("--algorithm", default=None,
                   help="a library algorithm (summa, cannon, ...: see distal.kernels.names()) or auto")
    p.add_argument("--grid", default=None,
                   help="the machine, e.g. 2x2 or 2x2x2: the algorithm runs on it and --format distributes onto "
                   "it; refused without --algorithm or --format (the default schedule runs on one processor)")
    return p


def explain_main(argv: list[str]) -> int:
    """Compile a statement with an algorithm or the default schedule and print its plan."""
    args = _explain_parser().parse_args(argv)
    import distal as dt

    if args.grid is not None and args.algorithm is None and not args.format:
        raise DistalError(
            f"expected --algorithm or --format with --grid {args.grid} (the default schedule does not use a "
            f"machine), but found neither for {args.statement!r}"
        )
    shapes = dict(_shape(s) for s in args.shape)
    dtypes: dict[str, str] = {}
    every: str | None = None
    for text in args.dtype:
        if "=" in text:
            name, value = _named("--dtype", text)
            dtypes[name] = value
        else:
            every = text.strip()
    formats = dict(_named("--format", s) for s in args.format)
    # A first parse over plain tensors finds the names the statement uses.
    probe = dt.parse(args.statement, **{name: dt.Tensor(name, shape) for name, shape in shapes.items()})
    used = list(dict.fromkeys(t.name for t in (probe.lhs.tensor, *probe.tensors())))
    for flag, given in (("--shape", shapes), ("--dtype", dtypes), ("--format", formats)):
        _check_names(flag, given, used, args.statement)
    grid = _grid(args.grid) if args.grid is not None else None
    machine: dt.Machine | None = None
    if grid is not None:
        machine = dt.Machine(dt.Grid(*grid))
    elif args.algorithm is not None:
        import distal.kernels as kernels

        # 4 processors; COSMA and auto choose their grid from a matrix product's (m, n, k).
        out_shape, first_in = shapes.get(used[0], ()), shapes.get(used[1], ()) if len(used) > 1 else ()
        mnk = (*out_shape, first_in[1]) if len(out_shape) == 2 and len(first_in) == 2 else None
        machine = kernels.machine(args.algorithm, 4, mnk)
    elif formats:
        raise DistalError(f"expected --grid with --format (the machine the formats name), but found none "
                          f"for {args.statement!r}")
    tensors = {}
    for name, shape in shapes.items():
        fmt = dt.Format(formats[name], machine) if name in formats and machine is not None else None
        tensors[name] = dt.Tensor(name, shape, fmt, dtype=dtypes.get(name, every or "float64"))
    stmt = dt.parse(args.statement, **tensors)
    out = tensors[stmt.lhs.tensor.name]
    if args.algorithm is not None and machine is not None:
        import distal.kernels as kernels

        operands = [out, *[tensors[t.name] for t in stmt.tensors() if t.uid != out.var.uid]]
        sched = kernels.build(args.algorithm, machine, *operands)
    else:
        sched = out.schedule()
    print(sched)
    print(sched.compile().explain())
    return 0


def _run_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="distal run",
        description="Run a Python script with distal, as `python script.py args...` would. Legate starts on "
        "first use with defaults sized to the machine (or with LEGATE_CONFIG, when set).",
    )
    p.add_argument("script", help="the Python script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script (its sys.argv[1:])")
    return p


def run_main(argv: list[str]) -> int:
    """Run a Python script with distal (Legate starts with embedded defaults)."""
    args = _run_parser().parse_args(argv)
    script = args.script
    if not Path(script).is_file():
        raise DistalError(f"expected a Python script, but found no file {script!r}")
    sys.argv = [script, *args.args]
    runpy.run_path(script, run_name="__main__")
    return 0


def _bench_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="distal bench",
        description="Run distal's benchmarks (the scripts in bench/ of a distal checkout) and record their "
        "results as JSON with a description of the machine. Each benchmark prints its own progress.",
        epilog=f"benchmarks: {', '.join(BENCHES)}; run only when named: "
        f"{', '.join(n for n in BENCHES if n in _ONLY_WHEN_NAMED)} (the gpu- ones need GPUs; check exits 1 when a "
        "ratio fell; breakdown, fixed-cost and profile-higher diagnose where time goes; report "
        "prints Markdown tables of the records). "
        "Arguments after -- go to every benchmark script, e.g. distal bench matmul -- --quick",
    )
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="benchmarks to run (default: all but those run only when named)")
    p.add_argument("--results", type=Path, default=None, metavar="DIR",
                   help="folder the results are written to (default: $XDG_CACHE_HOME/distal/bench, i.e. "
                   "~/.cache/distal/bench); pass bench/results to re-record a checkout's results")
    p.add_argument("--bench-dir", type=Path, default=None, metavar="DIR",
                   help="the benchmark scripts (default: bench/ of the checkout distal was installed from)")
    return p


def default_results() -> Path:
    """Where `distal bench` writes unless told: the user's cache, never a checkout's tracked files."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "distal" / "bench"


def _bench_dir(given: Path | None) -> Path:
    where = given if given is not None else Path(__file__).resolve().parent.parent / "bench"
    if not ((where / "_common" / "__init__.py").is_file() or (where / "_common.py").is_file()):
        raise DistalError(
            f"expected distal's benchmark scripts (bench/ of a distal checkout), but found none in {where}; "
            "clone distal and run its `distal bench`, or pass --bench-dir"
        )
    return where


def bench_main(argv: list[str]) -> int:
    """Run benchmarks (all, or the named ones) and record results in a results folder."""
    rest: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1:]
    args = _bench_parser().parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        raise DistalError(f"expected benchmark names among {', '.join(BENCHES)}, but found "
                          f"{', '.join(repr(n) for n in unknown)}")
    names = args.names or [name for name in BENCHES if name not in _ONLY_WHEN_NAMED]
    where = _bench_dir(args.bench_dir)
    results = (args.results if args.results is not None else default_results()).resolve()
    results.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, RESULTS_ENV: str(results)}
    start = time.perf_counter()
    print(f"distal bench: {len(names)} benchmark(s) from {where}, results in {results}", flush=True)
    for n, name in enumerate(names, 1):
        script = where / BENCHES[name]
        if not script.is_file():
            raise DistalError(f"expected the benchmark script {script} for {name!r}, but found no file")
        print(f"[{n}/{len(names)}] {name}: {script.name}  (elapsed {time.perf_counter() - start:.0f} s)",
              flush=True)
        code = subprocess.call([sys.executable, str(script), *rest], cwd=where, env=env)
        if code:
            print(f"distal bench: {name} exited with status {code}", file=sys.stderr)
            return code
    print(f"distal bench: done in {time.perf_counter() - start:.0f} s; results in {results}", flush=True)
    return 0


def redistribute_main(argv: list[str]) -> int:
    from distal.redist.redistribute_cli import redistribute_main as run

    return run(argv)


def reduce_main(argv: list[str]) -> int:
    from distal.reduction.reduce_cli import reduce_main as run

    return run(argv)


COMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "explain": (explain_main, "compile a statement and print its schedule and plan"),
    "run": (run_main, "run a Python script with distal"),
    "redistribute": (redistribute_main, "synthesize collectives between two distributions"),
    "reduce": (reduce_main, "placements and reduction programs for a hierarchical system"),
    "bench": (bench_main, "run the benchmarks of a checkout and record their results"),
}


def _version() -> str:
    import distal

    return distal.__version__


def _main_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<13} {text}" for name, (_, text) in COMMANDS.items())
    p = _Parser(
        prog="distal",
        description="DISTAL, the distributed tensor algebra compiler, on Legate.",
        epilog=f"commands:\n{commands}\n\n`distal COMMAND --help` describes a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"distal {_version()}")
    p.add_argument("command", choices=list(COMMANDS), metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    p.add_argument("args", nargs=argparse.REMAINDER, help="the command's arguments")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `distal` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        if name is None:
            if argv and not argv[0].startswith("-"):
                print(f"distal: expected a command ({', '.join(COMMANDS)}), but found {argv[0]!r}; "
                      "see distal --help", file=sys.stderr)
                return 2
            if not argv:
                _main_parser().print_help(sys.stderr)
                return 2
            _main_parser().parse_args(argv)  # --help, --version, or an unknown command
            return 2
        return COMMANDS[name][0](argv[1:])
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except DistalError as exc:
        print(f"distal {name or ''}: {exc}".replace("distal : ", "distal: "), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`distal explain ... | head`): stop quietly, as Unix tools do, and
        # send what is still buffered to /dev/null so that Python's exit does not fail flushing it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # what a tool killed by SIGPIPE reports


if __name__ == "__main__":
    raise SystemExit(main())
