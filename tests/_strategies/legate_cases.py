"""Random differential cases on Legate, drawn with `random.Random` and run many to a process.

Each case draws, from its own seed (`case_seed(seed, n)`, so any case can be
replayed alone):

* a statement over 1-3 operands of order 0-3 with + and *, extents 1-7
  (primes and extents that do not divide the machine), `=` or `+=`, an
  output of order 0-3 (scalar outputs included), dtype float64, float32 or
  int64;
* a machine: 1-D (2, 3, 5, 7), 2-D, 3-D or hierarchical, with prime sizes;
* formats on it for some or all tensors, with fixed (`0`) and broadcast (`*`)
  dimensions, and sometimes an input redistributed to another format before
  the computation;
* a schedule from all ten commands combined freely: transformations first
  (split/divide with remainders, fuse, reorder, precompute), then
  `distribute` (compound onto the machine, level by level on hierarchical
  machines, or the simple form, often of a fused loop), then any command
  again (split/divide of local loops, rotate under distribute, precompute
  inside tasks, communicate, parallelize, substitute, reorder);
* how rotations launch ("boxes" or "points"), and sometimes a second run of
  the same plan.

The result is compared with `numpy.einsum` (`einsum_oracle`): int64 exactly,
floats within a tolerance scaled by the sum of the terms' magnitudes.
A schedule that `compile` refuses with `NotSupportedYet` is counted as
refused, not run; any other exception or difference is a failure.

`python -m tests._strategies.legate_cases --cases N --seed S` runs N cases and
prints one JSON line per case (the test reads them); `--case n` replays one.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import distal as dt
from distal.cin.statements import Assign, assignments
from distal.errors import DistalError, NotSupportedYet
from distal.format.format import Format
from distal.notation.ast import Access, Add, Expr, IndexVar, Literal, Mul
from distal.schedule import tree
from tests._strategies import Fresh, einsum_oracle

__all__ = ["COMMANDS", "FEATURES", "Case", "case_seed", "draw_format", "run_case"]

COMMANDS = ("divide", "split", "reorder", "fuse", "parallelize", "precompute", "distribute", "communicate",
            "rotate", "substitute")
FEATURES = ("machine-1d", "machine-2d", "machine-3d", "machine-hierarchical", "prime-machine",
            "non-dividing-extent", "fixed-dim", "broadcast-dim", "float64", "float32", "int64",
            "scalar-output", "accumulate", "redistribute", "rerun", "fuse-under-distribute",
            "rotate-under-distribute", "precompute-in-task", "remainder", "points", "boxes",
            "distributed-launch")

MACHINES: dict[str, tuple[dt.Machine, ...]] = {
    "1d": (dt.Machine(dt.Grid(2)), dt.Machine(dt.Grid(3)), dt.Machine(dt.Grid(5)), dt.Machine(dt.Grid(7))),
    "2d": (dt.Machine(dt.Grid(1, 3)), dt.Machine(dt.Grid(3, 2)), dt.Machine(dt.Grid(2, 2)),
           dt.Machine(dt.Grid(3, 3))),
    "3d": (dt.Machine(dt.Grid(2, 2, 2)), dt.Machine(dt.Grid(3, 1, 2)), dt.Machine(dt.Grid(1, 3, 1))),
    "hierarchical": (dt.Machine(dt.Grid(2), dt.Grid(3)), dt.Machine(dt.Grid(3), dt.Grid(2)),
                     dt.Machine(dt.Grid(1, 2), dt.Grid(3, 1))),
}
DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64))
_VARS = dt.index_vars("i j k l")


def case_seed(seed: int, n: int) -> int:
    """The seed of case `n` of a run seeded `seed`."""
    return (seed * 1_000_003 + n) & 0xFFFF_FFFF


@dataclass
class Case:
    """One drawn case: what it ran and what it found."""

    number: int
    features: set[str] = field(default_factory=set)
    commands: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # the reproducer, as Python-ish lines

    def note(self, line: str) -> None:
        self.text.append(line)


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    if dtype.kind == "i":
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def draw_format(rng: random.Random, order: int, machine: dt.Machine, case: Case | None = None) -> Format:
    """A random format of an order-`order` tensor on `machine`: per level, each machine dimension partitions a
    dimension not partitioned yet, or is fixed (0) or broadcast (*) (drawn features noted in `case`)."""
    levels = []
    for grid in machine.grids:
        names = "abcd"[:order]
        free = list(names)
        entries = []
        for _ in range(grid.ndim):
            choice = rng.randint(0, 3)
            if choice <= 1 and free:
                entries.append(free.pop(rng.randrange(len(free))))
            elif choice == 2:
                entries.append("0")
                if case is not None:
                    case.features.add("fixed-dim")
            else:
                entries.append("*")
                if case is not None:
                    case.features.add("broadcast-dim")
        levels.append(f"{names} -> {''.join(entries)}")
    return Format(levels if len(levels) > 1 else levels[0], machine)


@dataclass
class _Drawn:
    out: dt.Tensor
    stmt: Any
    inputs: dict[str, np.ndarray]
    init: np.ndarray
    machine: dt.Machine
    formats: dict[str, Format]


def _statement(rng: random.Random, nrng: np.random.Generator, case: Case) -> _Drawn:
    dtype = rng.choice(DTYPES)
    case.features.add(dtype.name)
    kind = rng.choice(sorted(MACHINES))
    machine = rng.choice(MACHINES[kind])
    case.features.add(f"machine-{kind}")
    if any(n in (3, 5, 7) for g in machine.grids for n in g.dims):
        case.features.add("prime-machine")
    nvars = rng.randint(1, 4)
    vars_ = list(_VARS[:nvars])
    ext = {v: rng.randint(1, 7) for v in vars_}
    sizes = {n for g in machine.grids for n in g.dims if n > 1}
    if any(e % n for e in ext.values() for n in sizes):
        case.features.add("non-dividing-extent")
    formatted = rng.random() < 0.7
    formats: dict[str, Format] = {}
    exprs: list[Expr] = []
    inputs: dict[str, np.ndarray] = {}
    for n in range(rng.randint(1, 3)):
        order = rng.randint(0, min(3, nvars))
        idx = rng.sample(vars_, order)
        name = string.ascii_uppercase[1 + n]
        data = _data(nrng, tuple(ext[v] for v in idx), dtype)
        fmt = draw_format(rng, order, machine, case) if formatted and order and rng.random() < 0.8 else None
        t = dt.Tensor.from_array(name, data, fmt)
        if fmt is not None:
            formats[name] = fmt
        inputs[name] = data
        e: Expr = t[tuple(idx)] if idx else t[()]
        if rng.random() < 0.1:
            e = Mul(Literal(2), e) if rng.random() < 0.5 else Add(e, Literal(3 if dtype.kind == "i" else 1.5))
        exprs.append(e)
    while len(exprs) > 1:
        at = rng.randrange(len(exprs) - 1)
        op = rng.choice([Add, Mul, Mul])
        exprs[at: at + 2] = [op(exprs[at], exprs[at + 1])]
    out_order = 0 if rng.random() < 0.15 else rng.randint(1, min(3, nvars))
    out_idx = tuple(rng.sample(vars_, out_order))
    if not out_idx:
        case.features.add("scalar-output")
    shape = tuple(ext[v] for v in out_idx)
    accumulate = rng.random() < 0.4
    init = _data(nrng, shape, dtype) if accumulate else np.zeros(shape, dtype)
    fmt = draw_format(rng, len(shape), machine, case) if formatted and shape and rng.random() < 0.8 else None
    out = dt.Tensor.from_array("A", init, fmt) if accumulate else dt.Tensor("A", shape, fmt, dtype=dtype)
    if fmt is not None:
        formats["A"] = fmt
    lhs = out[out_idx] if out_idx else out[()]
    if accumulate:
        case.features.add("accumulate")
        out[out_idx] = Access.__iadd__(lhs, exprs[0])
    else:
        out[out_idx] = exprs[0]
    stmt = out.assignment
    case.note(f"# dtype {dtype.name}, machine {machine!r}, extents "
              + ", ".join(f"{v}={n}" for v, n in ext.items()))
    case.note(f"{stmt}")
    for name, f in formats.items():
        case.note(f"#   {name}: {f}")
    return _Drawn(out, stmt, inputs, init, machine, formats)


# -- schedules -------------------------------------------------------------------------------


def _chain_of(s: dt.Schedule, v: IndexVar) -> list[IndexVar]:
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    return tree.chain_at(s.stmt, path)[1]


def _enclosing(s: dt.Schedule, v: IndexVar) -> list[IndexVar]:
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    return [node.var for k in range(len(path)) if hasattr(node := tree.node_at(s.stmt, path[:k]), "var")]


def _subexpressions(e: Expr) -> list[Expr]:
    out = [e]
    for c in e.children():
        out += _subexpressions(c)
    return out


def _command(rng: random.Random, name: str, s: dt.Schedule, fresh: Fresh, case: Case,
             machine: dt.Machine, distributed: bool) -> dt.Schedule:
    """Apply command `name` with random arguments (raises DistalError when it does not apply)."""
    loops = list(s.loop_vars())
    if not loops:
        raise DistalError("no loops")
    if name in ("split", "divide"):
        v = rng.choice(loops)
        size = rng.randint(1, 4)
        out: dt.Schedule = getattr(s, name)(v, fresh(), fresh(), size)
        n = s.provenance.extents({}).get(v, 0)
        if n % size:
            case.features.add("remainder")
        return out
    if name == "reorder":
        chain = _chain_of(s, rng.choice(loops))
        return s.reorder(rng.sample(chain, len(chain)))
    if name == "fuse":
        v = rng.choice(loops)
        path = tree.forall_path(s.stmt, v)
        assert path is not None
        inner = getattr(tree.node_at(s.stmt, path).children()[0], "var", v)
        return s.fuse(v, inner, fresh())
    if name == "parallelize":
        return s.parallelize(rng.choice(loops), rng.choice(dt.schedule.PARALLEL_UNITS))
    if name == "precompute":
        assign = next(iter(assignments(s.stmt)))
        expr = rng.choice(_subexpressions(assign.rhs))
        apath = tree.find(s.stmt, lambda x: x is assign)
        assert apath is not None
        enclosing = [node.var for k in range(len(apath))
                     if hasattr(node := tree.node_at(s.stmt, apath[:k]), "var")]
        local = [v for v in enclosing if v not in s.distributed_vars()]
        if not local:
            raise DistalError("no loops")
        k = rng.randint(1, len(local))
        vs = local[len(local) - k:]
        out = s.precompute(expr, vs, [fresh() for _ in vs])
        if distributed:
            case.features.add("precompute-in-task")
        return out
    if name == "communicate":
        return s.communicate(rng.choice(s.tensors()), rng.choice(loops))
    if name == "rotate":
        dist = [v for v in s.distributed_vars() if v in loops]
        t = rng.choice([v for v in loops if v not in dist] or loops)
        around = _enclosing(s, t)
        by = [v for v in around if v in dist] if dist and rng.random() < 0.8 else around
        if not by:
            raise DistalError("nothing to rotate by")
        out = s.rotate(t, rng.sample(by, rng.randint(1, len(by))), fresh())
        if any(v in dist for v in by):
            case.features.add("rotate-under-distribute")
        return out
    if name == "substitute":
        v = rng.choice(loops)
        path = tree.forall_path(s.stmt, v)
        assert path is not None
        _, chain, body = tree.chain_at(s.stmt, path)
        if not isinstance(body, Assign):
            raise DistalError("no leaf here")
        k = rng.randint(1, len(chain))
        leaf = rng.choice([dt.leaf.GENERIC, dt.leaf.GENERIC, dt.leaf.GEMM, dt.leaf.TTV, dt.leaf.INNERPROD])
        return s.substitute(chain[len(chain) - k:], leaf)
    assert name == "distribute"
    return _distribute(rng, s, fresh, case, machine)


def _distribute(rng: random.Random, s: dt.Schedule, fresh: Fresh, case: Case, machine: dt.Machine) -> dt.Schedule:
    loops = [v for v in s.loop_vars() if v not in s.distributed_vars()]
    fused = [v for v in loops if s.provenance.producer(v) is not None
             and type(s.provenance.producer(v)).__name__ == "Fuse"]
    if rng.random() < 0.3:
        targets = ([rng.choice(fused)] if fused and rng.random() < 0.7 else
                   rng.sample(loops, min(len(loops), rng.randint(1, 2))))
        ext = s.provenance.extents({})
        if np.prod([ext[v] for v in targets]) > 16:
            raise DistalError("too many points for the simple form")
        out = s.distribute(targets)
        picked = list(targets)
    else:
        out, locals_, picked = s, loops, []
        for level, grid in enumerate(machine.grids):
            if len(locals_) < grid.ndim:
                raise DistalError("not enough loops")
            targets = [v for v in fused if v in locals_][:1] if fused and rng.random() < 0.7 else []
            rest = [v for v in locals_ if v not in targets]
            targets += rng.sample(rest, grid.ndim - len(targets))
            picked += targets
            dist = [fresh() for _ in targets]
            locals_ = [fresh() for _ in targets]
            out = out.distribute(targets, dist, locals_, machine, level=level)
    if any(v in fused for v in picked):
        case.features.add("fuse-under-distribute")
    return out


def schedule(rng: random.Random, drawn: _Drawn, case: Case) -> dt.Schedule:
    """A random schedule of the drawn statement from all ten commands."""
    s = drawn.out.schedule()
    fresh = Fresh()

    def attempt(name: str, distributed: bool) -> None:
        nonlocal s
        try:
            s = _command(rng, name, s, fresh, case, drawn.machine, distributed)
        except (DistalError, NotSupportedYet):
            return
        case.commands.append(name)

    for _ in range(rng.randint(0, 3)):
        attempt(rng.choice(["split", "divide", "fuse", "fuse", "reorder", "precompute"]), False)
    if rng.random() < 0.85:
        attempt("distribute", False)
    distributed = bool(s.distributed_vars())
    later = (*COMMANDS, "communicate", "communicate", "rotate", "rotate", "substitute", "substitute")
    for _ in range(rng.randint(0, 5)):
        attempt(rng.choice(later), distributed)
    return s


# -- running ---------------------------------------------------------------------------------


def _compare(got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray, dtype: np.dtype[Any]) -> str | None:
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if dtype.kind == "i":
        ok = np.array_equal(got.astype(np.float64), expected)
    else:
        eps = 1e-5 if dtype == np.float32 else 1e-11
        ok = bool(np.all(np.abs(got.astype(np.float64) - expected) <= eps * (magnitude + 1.0)))
    if ok:
        return None
    bad = np.argwhere(~np.isclose(got.astype(np.float64), expected, rtol=1e-5 if dtype == np.float32 else 1e-10))
    return f"differs at {len(bad)} element(s), e.g. {bad[:3].tolist()}: got {got!r}, expected {expected!r}"


def run_case(seed: int, n: int) -> dict[str, Any]:
    """Draw and run case `n`; the result as a JSON-able dict."""
    case = Case(n)
    rng = random.Random(case_seed(seed, n))
    nrng = np.random.default_rng(case_seed(seed, n))
    result: dict[str, Any] = {"case": n, "status": "ok"}
    try:
        drawn = _statement(rng, nrng, case)
        stmt = drawn.stmt
        expected = einsum_oracle(stmt, drawn.inputs, drawn.init)
        magnitude = einsum_oracle(stmt, {k: np.abs(v) for k, v in drawn.inputs.items()}, np.abs(drawn.init))
        if drawn.formats and rng.random() < 0.12:
            name = rng.choice(sorted(k for k in drawn.formats if k != "A") or ["A"])
            if name != "A":
                tensor = next(t for t in drawn.out.operands if t.name == name)
                target = draw_format(rng, tensor.order, drawn.machine, case)
                case.note(f"{name}.redistribute(Format({str(target)!r}, machine))")
                case.features.add("redistribute")
                tensor.redistribute(target)
        sched = schedule(rng, drawn, case)
        rotation = rng.choice(["boxes", "points"])
        case.note(f"sched = {sched.trace_text()}")
        case.note(f"plan = sched.compile(rotation={rotation!r})")
        try:
            plan = sched.compile(rotation=rotation)
        except NotSupportedYet as exc:
            result.update(status="refused", error=str(exc).splitlines()[0])
            return result
        case.features.add(rotation)
        if plan.groups and plan.groups[0].distributed > 0:
            case.features.add("distributed-launch")
        runs = 2 if rng.random() < 0.15 else 1
        for run in range(runs):
            plan.run()
            got = drawn.out.to_numpy()
            problem = _compare(got, expected, magnitude, np.dtype(drawn.init.dtype))
            if problem is not None:
                result.update(status="wrong", error=f"run {run + 1}: {problem}")
                break
            if run == 0 and runs == 2:
                case.features.add("rerun")
                case.note("plan.run()  # again")
                if stmt.accumulate:
                    expected = einsum_oracle(stmt, drawn.inputs, expected)
                    magnitude = magnitude * 2
    except Exception as exc:  # any failure is a finding, reported with its reproducer
        result.update(status="error", error="".join(traceback.format_exception_only(exc)).strip()[:2000],
                      where=traceback.format_exc()[-1500:])
    result["features"] = sorted(case.features)
    result["commands"] = case.commands
    result["repro"] = "\n".join(case.text)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000, help="cases that run on Legate (refusals not counted)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case", type=int, default=None, help="replay this case alone")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    numbers = [args.case] if args.case is not None else range(args.cases * 3)
    ran = 0
    start = time.perf_counter()
    for n in numbers:
        print(json.dumps({"start": n}), flush=True)
        result = run_case(args.seed, n)
        print(json.dumps(result), flush=True)
        ran += result["status"] != "refused"
        if args.case is None and ran >= args.cases:
            break
    print(json.dumps({"done": ran, "seconds": round(time.perf_counter() - start, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
