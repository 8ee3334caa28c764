"""The `distal` command line: explain, run, redistribute, reduce, bench.

    distal explain "A(i,j) = B(i,k) * C(k,j)" --shape A=1000x1000 --shape B=1000x1000 \\
                   --shape C=1000x1000 --algorithm summa --grid 2x2
    distal run script.py [args...]
    distal redistribute "[32{x,y}512, 128]" "[128{x}512, 32{y}128]" --mesh x=4,y=4
    distal reduce --system a100x2 ...
    distal bench [matmul|suite|redist|redist-legate|reduction|launch|kernel-modes|gpu-gemm]
"""

from __future__ import annotations

import argparse
import runpy
import subprocess
import sys
from pathlib import Path

from distal.errors import DistalError

__all__ = ["main"]

_ROOT = Path(__file__).resolve().parent.parent
BENCHES = {
    "matmul": "bench/matmul.py",
    "suite": "bench/suite.py",
    "redist": "bench/redist_synthesis.py",
    "reduction": "bench/reduction_synthesis.py",
    "redist-legate": "bench/redist_legate.py",
    "launch": "bench/launch_overhead.py",
    "kernel-modes": "bench/kernel_modes.py",
    "gpu-gemm": "bench/gpu_gemm.py",  # needs GPUs: run only when named
}
_ONLY_WHEN_NAMED = {"gpu-gemm"}


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
    return dims


def explain_main(argv: list[str]) -> int:
    """Compile a statement with an algorithm or the default schedule and print its plan."""
    import distal as dt

    p = argparse.ArgumentParser(prog="distal explain", description=explain_main.__doc__)
    p.add_argument("statement", help='e.g. "A(i,j) = B(i,k) * C(k,j)"')
    p.add_argument("--shape", action="append", default=[], metavar="NAME=AxB", help="each tensor's shape")
    p.add_argument("--algorithm", default=None, help="a library algorithm (see dt.kernels.names())")
    p.add_argument("--grid", default=None, help="machine grid, e.g. 2x2 or 2x2x2")
    args = p.parse_args(argv)
    shapes = dict(_shape(s) for s in args.shape)
    tensors = {name: dt.Tensor(name, shape) for name, shape in shapes.items()}
    stmt = dt.parse(args.statement, **tensors)
    out = stmt.lhs.tensor
    if args.algorithm is not None:
        import distal.kernels as kernels

        operands = [out, *[t for t in stmt.tensors() if t is not out]]
        grid = _grid(args.grid) if args.grid else None
        machine = dt.Machine(dt.Grid(*grid)) if grid else kernels.machine(args.algorithm, 4)
        sched = kernels.build(args.algorithm, machine, *operands)
    else:
        sched = out.schedule()
    print(sched)
    print(sched.compile().explain())
    return 0


def run_main(argv: list[str]) -> int:
    """Run a Python script with distal (Legate starts with embedded defaults)."""
    if not argv:
        raise DistalError("expected a script to run: distal run script.py [args...]")
    script = argv[0]
    if not Path(script).is_file():
        raise DistalError(f"expected a Python script, but found no file {script!r}")
    sys.argv = list(argv)
    runpy.run_path(script, run_name="__main__")
    return 0


def bench_main(argv: list[str]) -> int:
    """Run benchmarks (all, or the named ones) and record results in bench/results/."""
    p = argparse.ArgumentParser(prog="distal bench", description=bench_main.__doc__)
    p.add_argument("names", nargs="*", choices=[[], *BENCHES], help=f"any of {', '.join(BENCHES)}")
    args, rest = p.parse_known_args(argv)
    names = args.names or [name for name in BENCHES if name not in _ONLY_WHEN_NAMED]
    for name in names:
        script = _ROOT / BENCHES[name]
        if not script.is_file():
            print(f"distal bench: {name}: {script} is not there", file=sys.stderr)
            return 2
        print(f"== {name}: {script.relative_to(_ROOT)}", flush=True)
        code = subprocess.call([sys.executable, str(script), *rest], cwd=_ROOT)
        if code:
            return code
    return 0


def redistribute_main(argv: list[str]) -> int:
    from distal.redist.cli import redistribute_main as run

    return run(argv)


def reduce_main(argv: list[str]) -> int:
    from distal.reduction.cli import reduce_main as run

    return run(argv)


COMMANDS = {
    "explain": explain_main,
    "run": run_main,
    "redistribute": redistribute_main,
    "reduce": reduce_main,
    "bench": bench_main,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `distal` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("commands:", ", ".join(COMMANDS))
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    command = COMMANDS.get(name)
    if command is None:
        print(f"distal: expected a command ({', '.join(COMMANDS)}), but found {name!r}", file=sys.stderr)
        return 2
    try:
        return command(rest)
    except DistalError as exc:
        print(f"distal {name}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
