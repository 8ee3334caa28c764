"""The body of one task: the scheduled statement run on the local tiles of its operands.

A `TaskBody` runs the scheduled statement with the launch variables fixed to
the launch point's values. Loops it meets whose variable is fixed are
skipped (they were hoisted into the launch); the remaining loops run here.
Coordinates are global: each tile carries its origin (the global coordinate
of its first element), subtracted when the tile is indexed.

The innermost loops above an assignment run as one block:

* slice mode: when every loop of the block maps to a contiguous range of one
  tensor dimension (original variables, inner variables of divide and split),
  each access is a slice of its tile and the block is the substituted
  leaf's own implementation when the block has the leaf's pattern
  (`Leaf.compute_into`: BLAS-shaped matmuls and reductions that write or add
  into the output tile), else one `numpy.einsum` with an optimised
  contraction path, or a broadcast NumPy expression when the right side is
  not a product;
* index mode: otherwise (fused or rotated loops inside the task), or when
  slice mode would run its block once per element of the loops outside it,
  the block's points are enumerated as index arrays, as the reference
  executor does.

No mode loops over elements in Python. The calls go to the tiles' array
namespace: NumPy on CPU processors, CuPy on GPUs (cuBLAS for GEMM), so a
GPU task never copies its tiles to the host.

A task body is compiled once per launch point: the first call of a point
walks the statement (`Walker.stmt`, recovery of derived variables through
the provenance graph, affine forms) and keeps the steps it ran as the
point's program (`Step`: a slice block with every view's index into its
tile, its leaf or einsum spec and output axes worked out; a workspace's
zeros; an index-mode block with its index values). Later calls of the point
(same tile shapes) replay the program: per call, only views, the one
BLAS/einsum call per block and the store remain. A point walks at every call
where its structure is not a fixed list of steps: a loop on a thread pool
inside the task, an index-mode block whose index arrays are too large to
keep, or more than PROGRAM_LIMIT steps (`TaskBody.walks` says which and why).

Parallel loops (`parallelize`, modes chosen by `distal.lower.parallel`): a
"vector" loop starts the block (it and every loop inside it run as one
vectorised block, whatever the cost model would pick); a "threads" loop
splits its iterations into contiguous chunks run by a thread pool, each
thread adding into its own zeroed copy of the output when the loop reduces
into it (`distal.lower.thread_pool`); "sequential" runs as if not parallel.

The steps themselves are `distal.lower.steps`; which substituted leaf a
block runs is decided with `distal.lower.leaf_match`.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from distal.cin.statements import Assign, Stmt, assignments
from distal.cin.walk import Walker
from distal.errors import RuntimeFailure
from distal.leaf import Leaf
from distal.lower.leaf_match import chain_above, leaf_pattern
from distal.lower.parallel import ParallelLoop
from distal.lower.steps import (
    LETTERS,
    BlockValue,
    Counts,
    IndexStep,
    SliceStep,
    Step,
    View,
    ZeroStep,
    calls_of,
    canonical,
    is_product,
    stand_in,
)
from distal.lower.thread_pool import run_chunks
from distal.notation.ast import Access, Expr, IndexVar, Literal
from distal.notation.check import compute_dtype
from distal.notation.variable import TensorVar
from distal.notation.visit import product_factors, summed_vars
from distal.schedule.provenance import Provenance

__all__ = ["BLOCK_LIMIT", "TaskBody", "zero_fill"]

BLOCK_LIMIT = 1 << 22  # points materialised at once by a broadcast or index-mode block
PROGRAM_LIMIT = 4096  # steps kept as a launch point's compiled program
INDEX_KEEP_LIMIT = 1 << 16  # index values an index-mode step keeps in a point's program

Form = tuple[IndexVar, int]  # value = offset + block variable


class _Facts(NamedTuple):
    """What a task body needs of one assignment, worked out once per plan (not per task point)."""

    sums: dict[IndexVar, int]  # sum-bound variables and their extents
    accesses: tuple[Access, ...]  # the output first
    product: bool  # the right side is a product of accesses and literals
    factors: tuple[Expr, ...]  # the right side's product factors
    dtype: Any  # the dtype the operands are converted to (as numpy.einsum(..., out=))
_EMPTY: Any = ({}, {}, {})


@dataclass(eq=False)
class TaskBody:
    """The kernel of a launch group: `body(point, *tiles)`.

    `vars` are the launch variables (one per launch dimension), `tensors` the
    operands in argument order, `origins[point]` the origin of each operand's
    tile at a launch point (operands given whole have origin 0). Setting
    `timings` to a list records (point, seconds, thread id) for every call.
    """

    stmt: Stmt
    prov: Provenance
    ext: Mapping[IndexVar, int]
    vars: tuple[IndexVar, ...]
    tensors: tuple[TensorVar, ...]
    shapes: tuple[tuple[int, ...], ...]
    leaves: tuple[tuple[frozenset[IndexVar], Leaf], ...]
    origins: dict[tuple[int, ...], tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    name: str = "distal_task"
    xp: Any = field(default=np, repr=False)
    timings: list[tuple[tuple[int, ...], float, int]] | None = field(default=None, repr=False)
    parallel: tuple[ParallelLoop, ...] = ()
    threads: int = field(default_factory=lambda: os.cpu_count() or 1, repr=False)
    keep_programs: bool = field(default=True, repr=False)
    """Whether a launch point's first call keeps its steps as the point's program (False: every call walks)."""
    _starts: dict[Any, int | None] = field(default_factory=dict, repr=False)
    _facts: dict[int, _Facts] = field(default_factory=dict, repr=False)
    _leaf_by_block: dict[tuple[IndexVar, ...], Leaf | None] = field(default_factory=dict, repr=False)
    _letters: dict[tuple[int, tuple[IndexVar, ...]], dict[IndexVar, str]] = field(default_factory=dict, repr=False)
    _scalars: tuple[int, ...] = field(init=False, repr=False)
    _slots: dict[TensorVar, int] = field(init=False, repr=False)
    _workspaces: tuple[None, ...] = field(init=False, repr=False)
    _programs: dict[tuple[tuple[int, ...], tuple[Any, ...]], tuple[Step, ...]] = field(
        default_factory=dict, repr=False)
    _fresh_programs: dict[tuple[tuple[tuple[int, ...], tuple[Any, ...]], int], tuple[bool, tuple[Step, ...]]] = field(
        default_factory=dict, repr=False)
    walks: dict[tuple[int, ...], str] = field(default_factory=dict, repr=False, compare=False)
    """Launch points that walk the statement at every call, and why (their steps are not kept)."""
    leaf_calls: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    """Blocks run by each leaf's own implementation (`Leaf.compute_into`), by leaf name."""
    ran: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    """The calls the blocks ran, worded as explain() words them (`distal.contract.Contraction.describe`)."""
    _counts: Counts = field(init=False, repr=False, compare=False)

    def facts(self, a: Assign) -> _Facts:
        """Per assignment (cached for the plan): see `_Facts`."""
        found = self._facts.get(id(a))
        if found is None:
            factors = product_factors(a.rhs)
            found = _Facts({v: self.ext[v] for v in summed_vars(a.rhs)}, (a.lhs, *a.rhs.accesses()),
                           all(isinstance(f, Access | Literal) for f in factors), factors,
                           compute_dtype(a.lhs, a.rhs))
            self._facts[id(a)] = found
        return found

    def letters(self, a: Assign, block: Sequence[IndexVar]) -> dict[IndexVar, str]:
        """The einsum letter of each block and sum variable of `a` (cached for the plan)."""
        key = (id(a), tuple(block))
        found = self._letters.get(key)
        if found is None:
            found = {v: LETTERS[n] for n, v in enumerate([*block, *self.facts(a).sums])}
            self._letters[key] = found
        return found

    def __call__(self, point: Sequence[int], *tiles: Any) -> None:
        self._call(point, tiles, None)

    def run_fresh(self, point: Sequence[int], position: int, *tiles: Any) -> None:
        """Run the point on tiles where `tiles[position]` (an output) holds no data yet (a new `=` output).

        The result is that of zeroing the tile and then running the point,
        without the zero fill where it is not needed: the first step that
        touches the tile writes it (`=`, the leaf's result straight into the
        tile) when it covers the whole tile and does not read it (a reduction
        the task computes in one step, or the first of several steps that
        each cover the tile: later ones add, as in the statement). Otherwise
        (a first step over part of the tile, an index-mode block, a loop on
        a thread pool, or no step at all) the tile is zero-filled first
        (`zero_fill`), then the point runs as usual.
        """
        if not 0 <= position < len(self.tensors):
            raise RuntimeFailure(f"{self.name}: expected an output position below {len(self.tensors)}, "
                                 f"but found {position}")
        self._call(point, tiles, position)

    def zero_fill(self, tile: Any) -> None:
        """Zero a fresh output tile of this body (`zero_fill`): what a runtime wrapping the body calls
        where it fills the tile itself (a padded block the tile fills only in part)."""
        zero_fill(tile)

    def _call(self, point: Sequence[int], tiles: Sequence[Any], fresh: int | None) -> None:
        start = time.perf_counter()
        if len(tiles) != len(self.tensors):
            raise RuntimeFailure(f"{self.name}: expected {len(self.tensors)} tiles, but found {len(tiles)}")
        xp = self.xp
        for tile in tiles:
            if type(tile) is not np.ndarray:
                xp = _array_module(tiles, self.xp)
                break
        key = (tuple(point), tuple([tile.shape for tile in tiles]))
        program = self._programs.get(key)
        if program is not None:  # the point's compiled program: its steps with every index worked out
            arrays = [*tiles, *self._workspaces]
            for n in self._scalars:
                arrays[n] = tiles[n].reshape(())
            if fresh is not None:
                found = self._fresh_programs.get((key, fresh))
                if found is None:
                    found = self._fresh_programs[(key, fresh)] = _fresh_program(program, fresh, arrays)
                zero_first, program = found
                if zero_first:
                    zero_fill(arrays[fresh])
            for step in program:
                step.run(arrays, xp, self._counts)
        else:
            self._walk(key, tiles, xp, fresh)
        if self.timings is not None:  # measuring where the time goes (bench/matmul.py)
            self.timings.append((tuple(int(x) for x in point), time.perf_counter() - start,
                                 threading.get_native_id()))

    def _walk(self, key: tuple[tuple[int, ...], tuple[Any, ...]], tiles: Sequence[Any], xp: Any,
              fresh: int | None = None) -> None:
        """Run the point by walking the statement, and keep the steps it ran as the point's program.

        A point's program is kept unless its walk ran a loop on a thread pool (`parallel_nest`), a large
        index-mode block (its index arrays are not kept), or more than PROGRAM_LIMIT steps: such a
        point walks the statement every time.
        """
        point = tuple(int(x) for x in key[0])
        origins = self.origins.get(point)
        if origins is None:
            origins = tuple((0,) * len(s) for s in self.shapes)
        arrays = [tile if shape else tile.reshape(()) for tile, shape in zip(tiles, self.shapes)]
        run = _Run(self, [*arrays, *self._workspaces], [*origins, *((),) * len(self._workspaces)], xp, record=[],
                   fresh=fresh)
        run.stmt(self.stmt, dict(zip(self.vars, point)))
        if run.fresh is not None:  # no step wrote the fresh tile: it still holds zeros after the point
            zero_fill(arrays[run.fresh])
        if not self.keep_programs:
            return
        if run.unkept is None and run.record is not None:
            self._programs[key] = tuple(run.record)
        else:
            self.walks[point] = run.unkept or "not kept"

    def __post_init__(self) -> None:
        self._scalars = tuple(n for n, s in enumerate(self.shapes) if not s)  # 0-d operands arrive with shape (1,)
        # a slot per operand (argument order), then one per workspace: steps find their arrays by slot
        self._slots = {t: n for n, t in enumerate(self.tensors)}
        for a in assignments(self.stmt):
            self._slots.setdefault(a.lhs.tensor, len(self._slots))
        self._workspaces = (None,) * (len(self._slots) - len(self.tensors))
        self._counts = Counts(self.leaf_calls, self.ran)

    def forget(self) -> None:
        """Drop what was worked out on earlier calls (slice-mode choices and the points' programs)."""
        self._starts.clear()
        self._programs.clear()
        self._fresh_programs.clear()
        self.walks.clear()

    def describe(self, fresh: bool = False, point: Sequence[int] | None = None,
                 tiles: Sequence[Sequence[int]] | None = None) -> str:
        """What each assignment runs on the tiles, as text; with `fresh` (the launch gets a new `=` output,
        `run_fresh`), whether each task's one step writes its whole output tile.

        With a launch `point` and the shapes of its `tiles` (explain passes the first point of the first
        launch), the point's steps are worked out without running them (`steps_at`) and each call is named
        as it runs: a substituted leaf's implementation, or the contraction `distal.contract` plans for the
        block's views (routine, shapes, copies: the words `TaskBody.ran` counts when it runs).
        """
        from distal import tile_blas
        from distal.leaf import einsum_pattern

        planned = self.steps_at(point, tiles) if point is not None and tiles is not None else None
        out = []
        for a in assignments(self.stmt):
            leaf = next((lf for vs, lf in self.leaves if vs & set(chain_above(self.stmt, a))), None)
            pattern = einsum_pattern(a.lhs, a.rhs) if is_product(a.rhs) else None
            calls = calls_of(planned[0], planned[1], a) if planned is not None else None
            if calls:
                how = "; then ".join(calls)
            elif leaf is not None and leaf.pattern is not None and leaf.pattern == pattern:
                blas = f"NumPy tiles: {tile_blas.short(leaf.tile_products)}" if leaf.tile_products else "NumPy's BLAS"
                how = f"the leaf's {leaf.how} ({blas}; CuPy/cuBLAS on GPUs)"
            elif pattern is not None:
                how = f"a contraction of '{pattern}' planned per tile (distal.contract)"
            else:
                how = "a broadcast NumPy expression"
            name = f"{leaf.name} " if leaf is not None else ""
            writes = "; its one step per task writes the whole output tile (= into a new output, no zero fill)" \
                if fresh and self.first_step_writes(a) else ""
            out.append(f"{a}: {name}{how} on the tiles{writes}")
        out.extend(str(p) for p in self.parallel)
        return "; ".join(out)

    def steps_at(self, point: Sequence[int], tiles: Sequence[Sequence[int]]
                 ) -> tuple[list[Step | str], list[Any]] | None:
        """The steps launch point `point` runs on tiles of these shapes (at most `_PLANNED_STEPS`), worked out
        on stand-in arrays that hold no data, without running any (a loop on a thread pool is its words),
        with the stand-ins they index. None when the shapes do not fit the operands."""
        if len(tiles) != len(self.tensors):
            return None
        origins = self.origins.get(tuple(int(x) for x in point)) or tuple((0,) * len(s) for s in self.shapes)
        arrays = [stand_in(tuple(int(n) for n in shape), t.dtype) for shape, t in zip(tiles, self.tensors)]
        arrays = [a if shape else a.reshape(()) for a, shape in zip(arrays, self.shapes)]
        run = _Run(self, [*arrays, *self._workspaces], [*origins, *((),) * len(self._workspaces)], np, record=[],
                   planning=True)
        try:
            run.stmt(self.stmt, dict(zip(self.vars, point)))
        except _Enough:
            pass
        return run.planned, run.tiles

    def first_step_writes(self, a: Assign) -> bool:
        """Whether each task runs `a` as one leaf step over its whole output tile: the only assignment, its
        leaf substituted for every loop inside the task, none of them parallel. Such a step writes a new
        `=` output's tile (`run_fresh`) instead of adding into a zero-filled one."""
        found = list(assignments(self.stmt))
        if found != [a] or a.lhs.tensor not in self._slots or self.parallel:
            return False
        inner = [v for v in chain_above(self.stmt, a) if v not in self.vars]
        leaf = self.leaf_of(inner) if inner else None
        return (leaf is not None and leaf.pattern is not None and is_product(a.rhs)
                and any(vs == set(inner) and lf is leaf for vs, lf in self.leaves)
                and leaf_pattern(a) == leaf.pattern)

    def mode_of(self, v: IndexVar) -> str | None:
        """How parallel loop `v` runs ("vector", "threads"), or None when it is not parallel."""
        for p in self.parallel:
            if p.var == v and p.mode != "sequential":
                return p.mode
        return None

    def names(self, letters: Mapping[IndexVar, str]) -> dict[str, str]:
        """What each block letter stands for in descriptions: the statement's variable it runs over (the
        root of a divided or split variable), or its own name where that would be ambiguous."""
        roots = {v: self.prov.roots(v) for v in letters}
        shown = {v: next(iter(r)).name if len(r) == 1 else v.name for v, r in roots.items()}
        counts: dict[str, int] = {}
        for name in shown.values():
            counts[name] = counts.get(name, 0) + 1
        return {c: shown[v] if counts[shown[v]] == 1 else v.name for v, c in letters.items()}

    def leaf_of(self, chain: Sequence[IndexVar]) -> Leaf | None:
        """The leaf substituted for loops all in `chain`, or None (cached for the plan)."""
        key = tuple(chain)
        if key not in self._leaf_by_block:
            self._leaf_by_block[key] = next((leaf for vs, leaf in self.leaves if vs <= set(chain)), None)
        return self._leaf_by_block[key]


class _Run(Walker):
    """One execution of a task body."""

    def __init__(self, body: TaskBody, tiles: list[Any], origin: list[tuple[int, ...]], xp: Any,
                 record: list[Step] | None = None, fresh: int | None = None, planning: bool = False) -> None:
        self.body = body
        self.ext = body.ext
        self.prov = body.prov
        self.slots = body._slots
        self.tiles = tiles  # each slot's tile (or workspace): operands in argument order, then workspaces
        self.origin = origin  # the global coordinate of each tile's first element
        self.xp = xp
        self.record = record  # the steps run so far (the point's program), None when it is not kept
        self.unkept: str | None = None  # why the point's program is not kept
        self.fresh = fresh  # the slot of an output tile that holds no data yet, until a step touches it
        self.planning = planning  # work the steps out on stand-in arrays without running them (`steps_at`)
        self.planned: list[Step | str] = []

    # -- statements ------------------------------------------------------------

    def workspace(self, w: TensorVar) -> None:
        shape = w.concrete_shape()
        self.origin[self.slots[w]] = (0,) * len(shape)
        self.run_step(ZeroStep(self.slots[w], shape, w.dtype))

    def nest(self, chain: list[IndexVar], a: Assign, env: dict[IndexVar, int]) -> None:
        """Loops `chain` (outermost first) above `a`: outer ones one by one, a suffix as a block."""
        at = next(((n, m) for n, v in enumerate(chain) if (m := self.body.mode_of(v)) is not None), None)
        if at is not None:
            self.parallel_nest(chain, at[0], at[1], a, env)
            return
        start = self._slice_start(chain, a, env)
        if start is None:
            self.index_nest(chain, a, env)
            return
        outer, inner = chain[:start], chain[start:]
        for values in itertools.product(*(range(self.ext[v]) for v in outer)):
            local = {**env, **dict(zip(outer, values))}
            if self.slice_block(a, local, inner) is None:
                self.index_nest(inner, a, local)

    def parallel_nest(self, chain: list[IndexVar], p: int, mode: str, a: Assign, env: dict[IndexVar, int]) -> None:
        """`chain` whose loop `chain[p]` is parallel: the loops outside it one by one, then it in `mode`."""
        outer, v, inner = chain[:p], chain[p], chain[p + 1:]
        if self.planning and mode != "vector":
            self.planned.append(f"loop {v} in chunks on a thread pool over {a}")
            raise _Enough
        for values in itertools.product(*(range(self.ext[x]) for x in outer)):
            local = {**env, **dict(zip(outer, values))}
            if mode == "vector":
                if self.slice_block(a, local, chain[p:]) is None:
                    self.index_nest(chain[p:], a, local)
            else:
                self.record, self.unkept = None, "a loop runs on a thread pool"  # its chunks are no steps
                if self.fresh is not None:  # the chunks add into the output tile: it starts at zero
                    zero_fill(self.tiles[self.fresh])
                    self.fresh = None
                self.thread_loop(v, inner, a, local)

    def thread_loop(self, v: IndexVar, inner: list[IndexVar], a: Assign, env: dict[IndexVar, int]) -> None:
        """Loop `v`'s iterations in contiguous chunks on a thread pool, each chunk running `inner` above `a`.

        A chunk runs as one slice block over its range of `v` and the loops
        inside when slice mode applies, else iteration by iteration. Where `v`
        does not fix the output element (it reduces into the output, which
        parallelize allows only for `+=`), each chunk adds into its own zeroed
        copy of the output tile, and the copies are added in after.
        """
        n = self.ext[v]
        workers = max(1, min(self.body.threads, n))
        bounds = [(n * c // workers, n * (c + 1) // workers) for c in range(workers)]
        lhs_roots: set[IndexVar] = set()
        for x in a.lhs.indices:
            lhs_roots |= self.prov.roots(x)
        private = not self.prov.roots(v) <= lhs_roots
        slot = self.slots[a.lhs.tensor]
        out = self.tiles[slot]

        def chunk(lo: int, hi: int) -> Any:
            run = self
            if private:
                tiles = list(self.tiles)
                tiles[slot] = self.xp.zeros_like(out)
                run = _Run(self.body, tiles, self.origin, self.xp)
            # the chunk as one slice block where it applies, else its iterations one by one
            if run.slice_block(a, env, [v, *inner], limits={v: (lo, hi)}) is None:
                for value in range(lo, hi):
                    run.nest(inner, a, {**env, v: value})
            return run.tiles[slot] if private else None

        partials = run_chunks(chunk, bounds)
        if private:
            for part in partials:
                out += part

    def index_nest(self, chain: list[IndexVar], a: Assign, env: dict[IndexVar, int]) -> None:
        """Loops `chain` above `a` in index mode, blocks of at most BLOCK_LIMIT / 4 points."""
        start = self._index_start(chain)
        outer, inner = chain[:start], chain[start:]
        for values in itertools.product(*(range(self.ext[v]) for v in outer)):
            self.index_block(a, {**env, **dict(zip(outer, values))}, inner)

    def _slice_start(self, chain: list[IndexVar], a: Assign, env: dict[IndexVar, int]) -> int | None:
        """The first loop of the longest suffix of `chain` that slice mode runs as one block.

        None when slice mode does not apply, or when index mode is cheaper
        (`_index_is_cheaper`). Structural (it depends on which variables are
        fixed, not on their values), so it is cached per assignment, chain
        and fixed set.
        """
        key = (id(a), tuple(chain), frozenset(env))
        if key in self.body._starts:
            return self.body._starts[key]
        found = None
        for start in range(len(chain) + 1):
            probe = {**env, **{v: 0 for v in chain[:start]}}
            if self.slice_block(a, probe, chain[start:], dry=True) is not None:
                found = start
                break
        if found is not None and self._index_is_cheaper(chain, found):
            found = None
        self.body._starts[key] = found
        return found

    def _index_is_cheaper(self, chain: list[IndexVar], start: int) -> bool:
        """Whether index mode beats slice mode with Python loops over `chain[:start]`.

        Slice mode runs one array call per iteration of the loops it cannot
        take into its block (a fused or rotated loop makes every iteration
        one call: a per-element loop in disguise); index mode runs one call
        per BLOCK_LIMIT / 4 points but costs more per point. Measured on the
        project's machines (an element-wise statement over a fused loop):
        about 21 us per call, 5 ns per point in a slice block, 40-60 ns per
        point in index mode (taken as 100 ns: scatters cost more).
        """
        if start == 0:
            return False
        call, per_slice_point, per_index_point = 20e-6, 5e-9, 1e-7
        calls = math.prod(self.ext[v] for v in chain[:start])
        block = math.prod(self.ext[v] for v in chain[start:])
        index_start = self._index_start(chain)
        index_calls = math.prod(self.ext[v] for v in chain[:index_start])
        slice_cost = calls * (call + block * per_slice_point)
        index_cost = index_calls * call + calls * block * per_index_point
        return index_cost < slice_cost

    def _index_start(self, chain: list[IndexVar]) -> int:
        start, points = len(chain), 1
        while start > 0 and points * self.ext[chain[start - 1]] <= BLOCK_LIMIT // 4:
            start -= 1
            points *= self.ext[chain[start]]
        return start

    # -- slice mode ------------------------------------------------------------

    def _forms(self, env: Mapping[IndexVar, int], block: Sequence[IndexVar], dry: bool = False
               ) -> tuple[dict[IndexVar, int], dict[IndexVar, Form], dict[IndexVar, int]] | None:
        """Integer values, affine forms (block var, offset), and an upper bound per block var."""
        values, guards = self.prov.recover(dict(env), self.ext)
        if not dry and not all(bool(g) for g in guards):
            return _EMPTY  # type: ignore[no-any-return]  # an iteration past an extent: nothing to do
        ints = {v: int(x) for v, x in values.items()}
        found = self.prov.affine_forms(ints, block, self.ext)
        if found is None:
            return None
        forms, upper = found
        return ints, forms, upper

    def slice_block(self, a: Assign, env: Mapping[IndexVar, int], block: Sequence[IndexVar],
                    dry: bool = False, limits: Mapping[IndexVar, tuple[int, int]] | None = None) -> bool | None:
        """Run the block in slice mode; None when slice mode does not apply.

        `limits` narrows block variables to [lo, hi) (a thread's chunk of a parallel loop).
        """
        found = self._forms(env, block, dry)
        if found is None:
            return None
        if found is _EMPTY:
            return True
        ints, forms, upper = found
        facts = self.body.facts(a)
        sums, accs, product = facts.sums, facts.accesses, facts.product
        reached: set[IndexVar] = set()
        for acc in accs:
            for v in acc.indices:
                if v in forms:
                    reached.add(forms[v][0])
                elif v not in ints and v not in sums:
                    return None
        if any(b not in reached for b in block):
            return None
        points = math.prod(self.ext[b] for b in block)
        if not product and points * max(1, math.prod(sums.values())) > BLOCK_LIMIT:
            # a broadcast expression materialises its points: on NumPy tiles a large output is computed chunk
            # by chunk of its first axis (`SliceStep.chunk_rows`), so one row of it must fit
            first = forms.get(a.lhs.indices[0]) if a.lhs.indices else None
            row = points // max(self.ext[first[0]], 1) if first is not None else points
            if self.xp is not np or row * max(1, math.prod(sums.values())) > BLOCK_LIMIT:
                return None
        if dry:
            return True
        ranges = {b: (0, upper[b]) for b in block}
        for b, (lo, hi) in (limits or {}).items():
            ranges[b] = (max(lo, 0), min(hi, ranges[b][1]))
        if any(hi <= lo for lo, hi in ranges.values()):
            return True
        step = self._step(a, block, ints, forms, sums, ranges, facts.dtype, product)
        if step is not None:
            self.run_step(step)
        return step is not None

    def _step(self, a: Assign, block: Sequence[IndexVar], ints: Mapping[IndexVar, int],
              forms: Mapping[IndexVar, Form], sums: Mapping[IndexVar, int],
              ranges: Mapping[IndexVar, tuple[int, int]], dtype: Any, product: bool) -> SliceStep | None:
        """The block as a `SliceStep`: every access's index into its tile worked out; None when the output
        view repeats an axis (slice mode does not apply)."""
        letters = self.body.letters(a, block)

        def index(acc: Access) -> tuple[tuple[Any, ...], str]:
            slot = self.slots[acc.tensor]
            arr, origin = self.tiles[slot], self.origin[slot]
            idx: list[Any] = []
            axes = ""
            for d, v in enumerate(acc.indices):
                if v in sums:
                    idx.append(slice(0 - origin[d], sums[v] - origin[d]))
                    axes += letters[v]
                elif v in forms:
                    b, off = forms[v]
                    lo, hi = ranges[b]
                    start = off + lo - origin[d]
                    if start < 0 or off + hi - origin[d] > arr.shape[d]:
                        raise RuntimeFailure(
                            f"tile of {acc.tensor.name} at origin {origin} shape {arr.shape} does not hold "
                            f"{v} in [{off + lo}, {off + hi})"
                        )
                    idx.append(slice(start, off + hi - origin[d]))
                    axes += letters[b]
                else:
                    idx.append(ints[v] - origin[d])
            return (*idx, Ellipsis), axes  # Ellipsis: a view even when every index is an int

        out_idx, out_axes = index(a.lhs)
        if len(set(out_axes)) != len(out_axes):
            return None
        views: dict[Access, View] = {acc: (self.slots[acc.tensor], *index(acc))
                                     for acc in self.body.facts(a).accesses[1:]}
        leaf = self.body.leaf_of(block)
        into: tuple[tuple[int, tuple[Any, ...]], ...] | None = None
        if leaf is not None and leaf.pattern is not None and product:
            factors = [views[f] for f in product_factors(a.rhs) if isinstance(f, Access)]
            if (len(factors) == len(product_factors(a.rhs))
                    and canonical(tuple(ax for _, _, ax in factors), out_axes) == leaf.pattern):
                into = tuple((t, idx) for t, idx, _ in factors)  # the leaf writes or adds into the output view
        value = None if into is not None else BlockValue(a.rhs, views, letters, sums, out_axes, leaf,
                                                         self.body.names(letters))
        return SliceStep(self.slots[a.lhs.tensor], out_idx, a.accumulate, dtype, leaf, into, value, out_axes, a)

    def run_step(self, step: Step) -> None:
        """Run one step of the task body on this run's tiles (and record it for the point's program).

        The first step that touches a fresh output tile writes it where it can (`Step.writing`); the
        tile is zero-filled first where it cannot.
        """
        if self.planning:
            if isinstance(step, ZeroStep):  # later views index the workspace: a stand-in of its shape
                self.tiles[step.slot] = stand_in(step.shape, step.dtype)
            self.planned.append(step)
            if len(self.planned) >= _PLANNED_STEPS:
                raise _Enough
            return
        run = step
        if self.fresh is not None and step.uses(self.fresh):
            writer = step.writing(self.tiles)
            if writer is None:
                zero_fill(self.tiles[self.fresh])
            else:
                run = writer
            self.fresh = None
        run.run(self.tiles, self.xp, self.body._counts)
        if self.record is not None:
            if len(self.record) < PROGRAM_LIMIT:
                self.record.append(step)
            else:  # a program this long would be a per-element loop kept in memory
                self.record, self.unkept = None, f"more than {PROGRAM_LIMIT} steps"

    # -- index mode ------------------------------------------------------------

    def index_block(self, a: Assign, env: dict[IndexVar, int], block: list[IndexVar]) -> None:
        """The block's points as index arrays, mapped through the provenance graph (any schedule)."""
        found = self.prov.block_points(env, block, self.ext)
        if found is None:
            return
        vals, npts = found
        if self.record is not None and npts * len(vals) > INDEX_KEEP_LIMIT:
            self.record, self.unkept = None, "an index-mode block too large to keep its index arrays"
        self.run_step(IndexStep(a, vals, npts, list(self.origin), self.slots, self.ext))


_PLANNED_STEPS = 64  # steps `TaskBody.steps_at` works out at most (a description needs the first few)


class _Enough(Exception):
    """Planning a point's steps (`TaskBody.steps_at`) went far enough."""


def zero_fill(tile: Any) -> None:
    """Zero a fresh output tile: the one place a task body fills its output with zeros (tests count calls)."""
    tile[...] = 0


def _fresh_program(program: tuple[Step, ...], slot: int, arrays: list[Any]) -> tuple[bool, tuple[Step, ...]]:
    """`program` run on a fresh tile at `slot`: (whether the tile is zero-filled first, the steps to run).

    The first step that touches the tile writes it when it can (`Step.writing`); the tile is zero-filled
    first when it cannot, or when no step touches it.
    """
    for n, step in enumerate(program):
        if step.uses(slot):
            writer = step.writing(arrays)
            if writer is None:
                return True, program
            return False, (*program[:n], writer, *program[n + 1:])
    return True, program


def _array_module(tiles: Sequence[Any], default: Any) -> Any:
    """The array namespace of the tiles: CuPy on a GPU task, NumPy (`default`) on CPUs.

    Tiles of another array library are recognised by the Array API's
    `__array_namespace__` (tests use this to run kernels on stand-in device
    arrays that refuse to become NumPy arrays). CuPy is imported only when
    a CuPy tile arrives.
    """
    for t in tiles:
        if isinstance(t, np.ndarray):
            continue
        if type(t).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
        namespace = getattr(t, "__array_namespace__", None)
        if namespace is not None:
            return namespace()
    return default
