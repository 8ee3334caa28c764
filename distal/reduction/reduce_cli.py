"""`distal reduce`: placements and ranked reduction programs for a system.

    distal reduce --system a100x2 --axes 4,8 --reduce 0
    distal reduce --levels node=4,gpu=8:nvlink --axes 32 --algorithm tree --top 3

For each parallelism placement it prints the synthesis hierarchy, the number
of programs, the synthesis time and the fastest programs by simulated time,
next to a single AllReduce.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from distal.errors import ReductionError
from distal.reduction.parallelism import enumerate_placements
from distal.reduction.ranking import DEFAULT_BYTES, allreduce_program, rank
from distal.reduction.synthesis import synthesize_programs
from distal.reduction.system import System, named_system, parse_levels
from distal.reduction.timing import ALGORITHMS

__all__ = ["build_parser", "reduce_main", "report"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distal reduce",
        description="Parallelism placements and ranked reduction programs for a hierarchical system "
        "(papers/hierarchical-reduction-synthesis.txt).",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--system", help="a paper system: a100x2, a100x4, v100x2, v100x4 (default a100x2)")
    where.add_argument(
        "--levels",
        help="levels outermost first, e.g. node=2,gpu=16 or node=4,gpu=8:nvlink "
        "(interconnects: nic, pcie, nvlink, nvswitch, shm)",
    )
    parser.add_argument("--axes", help="parallelism axes, e.g. 4,8 (default: one axis of all devices)")
    parser.add_argument("--reduce", default="0", help="reduction axes, e.g. 0 or 0,2 (default 0)")
    parser.add_argument("--algorithm", default="ring", choices=ALGORITHMS, help="NCCL algorithm modelled")
    parser.add_argument("--bytes", type=float, default=DEFAULT_BYTES, help="bytes per device (default 2 GiB)")
    parser.add_argument("--top", type=int, default=5, help="programs shown per placement (default 5)")
    parser.add_argument("--max-size", type=int, default=5, help="program size limit (default 5)")
    return parser


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        raise ReductionError(f"expected comma-separated integers for {flag}, but found {text!r}")
    return values


def report(
    system: System,
    axes: Sequence[int],
    reduction_axes: Sequence[int],
    algorithm: str = "ring",
    nbytes: float = DEFAULT_BYTES,
    top: int = 5,
    max_size: int = 5,
    out: TextIO | None = None,
) -> None:
    """Print placements and ranked programs (what `distal reduce` shows)."""
    stream = out if out is not None else sys.stdout
    if top < 1:
        raise ReductionError(f"expected a positive number of programs to show, but found {top}")
    placements = enumerate_placements(system, axes, reduction_axes)
    print(f"system {system}, {system.size} devices", file=stream)
    for line in system.describe().splitlines():
        print(f"  {line}", file=stream)
    print(
        f"parallelism axes {list(axes)}, reduction axes {list(reduction_axes)}, "
        f"{algorithm}, {nbytes / 2**30:g} GiB per device, {len(placements)} placements",
        file=stream,
    )
    for n, p in enumerate(placements, 1):
        hier = p.hierarchy()
        start = time.perf_counter()
        synth = synthesize_programs(hier, max_size)
        seconds = time.perf_counter() - start
        ranked = rank(p, nbytes, algorithm, max_size)
        single = allreduce_program(hier)
        ar = next(r for r in ranked if r.program == single)
        print(
            f"\nplacement {n}/{len(placements)}: {p}  synthesis hierarchy {hier}  "
            f"{len(synth)} programs ({seconds:.3f} s)",
            file=stream,
        )
        for i, r in enumerate(ranked[:top], 1):
            speedup = ar.seconds / r.seconds if r.seconds > 0 else 1.0
            print(f"  {i:2d}. {r.seconds:9.4f} s  {speedup:5.2f}x  {r.program}", file=stream)
        print(f"      {ar.seconds:9.4f} s  single AllReduce", file=stream)


def reduce_main(argv: list[str]) -> int:
    """Run `distal reduce` with `argv` (without the program name); returns the exit status:
    0, 1 for a system or axes distal cannot use, 2 for a usage mistake (argparse)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        system = parse_levels(args.levels) if args.levels else named_system(args.system or "a100x2")
        axes = _ints(args.axes, "--axes") if args.axes else [system.size]
        red = _ints(args.reduce, "--reduce")
        report(system, axes, red, args.algorithm, args.bytes, args.top, args.max_size)
    except ReductionError as err:
        print(f"distal reduce: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(reduce_main(sys.argv[1:]))
