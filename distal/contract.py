"""Products of tiles at BLAS and bandwidth speed: any einsum of NumPy or CuPy arrays, planned once.

`contraction(spec, operands)` turns an einsum pattern over arrays (`"abij,cdij->abcd"`,
every output letter in some input, letters repeated within an input for
diagonals) into a `Contraction`: a short list of steps that `run` executes
with the arrays' namespace `xp` (NumPy on CPU tiles, CuPy on GPU tiles).

* Each operand first loses its repeated letters (a diagonal view) and the
  letters no other operand and not the output has (summed once, streaming
  the operand).
* Operands are then contracted pairwise, in the order `numpy.einsum_path`
  finds cheapest (no limit on intermediate size: the triangle
  `abc,cde,efa->bdf` runs as two contractions, not one six-deep loop).
* A pair with contracted letters and matrices on both sides runs as one
  GEMM, or one batched GEMM over the letters both operands and the result
  share (the TTGT scheme of TBLIS, cuTENSOR and opt_einsum's BLAS path): each
  operand is viewed as a (batch..., rows, columns) array by a transpose and
  a reshape, which is a view where the operand's layout allows it and a copy
  otherwise; the group orders are chosen so that as little as possible is
  copied, and the product is written straight into the output when the
  output's letters are grouped as the product's. A pair without contracted
  letters is one broadcast multiply (an outer or element-wise product), a
  pair whose only free letters are shared is one dot (or an einsum loop
  when batched), and tiny batched matrices run as an einsum loop.

Float32/float64 matrix products of NumPy tiles run on `distal.tile_blas`.
Where NumPy's BLAS has several threads (an eager dt.einsum; a Legate task
has one), a large product or a stack of products is split into one share
per thread, each share's GEMMs on one BLAS thread, as Legate's tasks split
it (`_gemm`, `_each_on_tile_blas`, `_stacked_matmul`). An eager run's
products below `OWN_FROM` multiply-adds run on NumPy's matmul with NumPy's
own BLAS threads instead (`on_user_threads`, `_numpy_pool`): after each
threaded call OpenBLAS's worker threads spin on their core for about 0.1 s
(2^28 cycles of `nop`, THREAD_TIMEOUT in its blas_server.c) before they
sleep, so distal's instance running right after the user's own NumPy call
shared the two cores with NumPy's spinning worker (640x640x640 took 5.5-6.1
ms against 3.0-3.3 ms with OPENBLAS_THREAD_TIMEOUT=4 and NumPy's 4.3 ms).
One pool of threads is what the NumPy call being replaced uses as well.
`Contraction.describe()` names each call that runs (routine, shapes, copies);
`run` adds the description of what actually ran (copies depend on the
arrays' strides) to a `calls` counter, so that tests can compare the two.

>>> import numpy as np
>>> x, y = np.ones((4, 5, 6)), np.ones((6, 5, 3))
>>> c = contraction("abc,cbd->ad", (x, y))
>>> print(c.describe())
GEMM [4x30] @ [30x3] by numpy.matmul, copying operand 2 (90 elements); into the output
>>> c.run((x, y), np).shape
(4, 3)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from distal import tile_blas

__all__ = ["OWN_FROM", "Contraction", "Pair", "Prepare", "blas_threads", "contraction", "fresh_arrays",
           "largest_product", "on_user_threads", "run", "work"]

_CALL_ELEMENTS = 512  # a matrix product more in a stack costs about as much as copying this many elements


def _size(letters: Sequence[str], extents: dict[str, int]) -> int:
    return math.prod(extents[c] for c in letters)


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))


def _mergeable(shape: Sequence[int], strides: Sequence[int], axes: Sequence[int]) -> bool:
    """Whether `axes` (in this order) can be merged into one axis of a view: each is the next one's extent
    times its stride apart (axes of extent one do not count)."""
    live = [a for a in axes if shape[a] != 1]
    return all(strides[p] == strides[q] * shape[q] for p, q in itertools.pairwise(live))


def _matrix_ok(rows: int, cols: int, s_rows: int, s_cols: int, itemsize: int) -> bool:
    """Whether BLAS reads a (rows, cols) matrix with these strides without a copy (one unit stride)."""
    if (s_cols == itemsize or cols == 1) and (rows == 1 or s_rows >= cols * itemsize):
        return True
    return (s_rows == itemsize or rows == 1) and (cols == 1 or s_cols >= rows * itemsize)


@dataclass(frozen=True, slots=True)
class Prepare:
    """One operand's diagonal (repeated letters) and the sums over letters only it has, before any pair."""

    index: int
    letters: str  # the operand's letters as given
    diagonal: str  # the letters after taking the diagonal ("" letters unchanged)
    summed: str  # letters summed away here
    result: str  # the letters left

    def run(self, x: Any, xp: Any) -> Any:
        letters = self.letters
        if self.diagonal:
            x = xp.einsum(f"{letters}->{self.diagonal}", x)
            letters = self.diagonal
        if self.summed:
            axes = tuple(letters.index(c) for c in self.summed)
            x = x.sum(axis=axes, dtype=x.dtype) if xp is np else x.sum(axis=axes)
        return x

    def describe(self, names: Mapping[str, str] | None = None) -> str:
        parts = []
        if self.diagonal:
            parts.append(f"diagonal {_named(self.letters, names)}->{_named(self.diagonal, names)} (a view)")
        if self.summed:
            parts.append(f"sum over {', '.join(_named(c, names) for c in self.summed)}")
        return f"operand {self.index + 1}: " + ", ".join(parts)


class _Shapes(NamedTuple):
    """What running a pair needs, worked out when it is planned: each operand's transpose (None: none) and
    the shape it is viewed in, whether its matrices are then transposed, the output's stack of matrices and
    the result's shape."""

    a_perm: tuple[int, ...] | None
    a_shape: tuple[int, ...]
    a_swap: bool
    b_perm: tuple[int, ...] | None
    b_shape: tuple[int, ...]
    b_swap: bool
    out_shape: tuple[int, ...]
    result: tuple[int, ...]
    dtype_free: bool  # whether the product's dtype is its operands' (checked per call otherwise)


@dataclass(frozen=True, slots=True)
class Pair:
    """Two live operands (by id) contracted into one with letters `result`.

    `mode`: "gemm" (matrix products), "mul" (broadcast multiply, nothing
    contracted), "dot" (everything but shared letters contracted) or
    "einsum" (an einsum loop: a matrix-vector product that would copy or
    stack its matrix).

    For "gemm" the left operand is read as a stack of (left, contracted)
    matrices and the right one as (contracted, right) matrices, each letter
    group merged into one axis (a transposed matrix where `a_trans` /
    `b_trans`); the stack's axes are `batch` (letters both operands keep)
    then `a_outer` (letters of the left operand only, over which the right
    one is broadcast) then `b_outer`. The result's letters are
    batch + a_outer + b_outer + left + right.
    """

    i: int
    j: int
    a: str
    b: str
    batch: str
    a_outer: str
    b_outer: str
    left: str
    right: str
    contracted: str
    mode: str
    a_trans: bool
    b_trans: bool
    extents: tuple[tuple[str, int], ...]
    a_copy: bool  # predicted: the left operand is copied to be read as matrices
    b_copy: bool
    order: str = ""  # the result's letters where the mode writes them in any order (not "gemm"): the output's
    outer: str = ""  # an einsum loop's ("dot", "einsum") larger operand's outermost letter in memory
    shapes: _Shapes | None = field(default=None, compare=False, repr=False)  # worked out once (`_shapes`)

    @property
    def result(self) -> str:
        return self.order or self.batch + self.a_outer + self.b_outer + self.left + self.right

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """Matrices in the stack, their rows, columns and contracted extent."""
        ext = dict(self.extents)
        return (_size(self.batch + self.a_outer + self.b_outer, ext), _size(self.left, ext),
                _size(self.right, ext), _size(self.contracted, ext))

    @property
    def flops(self) -> float:
        nb, m, n, k = self.sizes
        if self.mode == "mul":
            return float(nb * m * n)
        return 2.0 * nb * m * n * k


@dataclass(frozen=True, slots=True)
class Contraction:
    """A planned einsum over operands of given shapes: its steps, output letters and operation count."""

    spec: str
    prepare: tuple[Prepare, ...]
    pairs: tuple[Pair, ...]
    live: tuple[str, ...]  # letters of the operands once prepared
    output: str
    extents: tuple[tuple[str, int], ...]
    layouts: tuple[tuple[int, ...], ...]  # each operand's axes by decreasing stride (what the plan assumed)
    texts: dict[Any, str] = field(default_factory=dict, compare=False, repr=False)  # descriptions, once each

    @property
    def flops(self) -> float:
        """Multiplies and adds of the pairs (the prepared sums and the last copy count one per element)."""
        ext = dict(self.extents)
        total = sum(p.flops for p in self.pairs)
        for p in self.prepare:
            total += math.prod(ext[c] for c in (p.diagonal or p.letters))
        return float(total)

    @property
    def routine(self) -> str:
        """The kind of the work, for the time model: "GEMM" when a matrix product runs, else "GENERIC"."""
        return "GEMM" if any(p.mode == "gemm" for p in self.pairs) else "GENERIC"

    def describe(self, dtype: Any = np.float64, xp_name: str = "numpy",
                 copied: Sequence[tuple[bool, bool]] | None = None, names: Mapping[str, str] | None = None) -> str:
        """The calls that run, in words: e.g. "GEMM [1600x1600] @ [1600x1600] by numpy.matmul; into the output".

        `copied` gives, per pair, whether each operand was copied (what ran); by default what the plan
        predicts for operands laid out as planned. `names` writes letters as the index variables they stand
        for (a task body's block letters). Each distinct description is worked out once."""
        key = (np.dtype(dtype).str, xp_name, None if copied is None else tuple(copied),
               None if names is None else tuple(sorted(names.items())), _pool_context())
        found = self.texts.get(key)
        if found is None:
            found = self.texts[key] = self._describe(dtype, xp_name, copied, names)
        return found

    def _describe(self, dtype: Any, xp_name: str, copied: Sequence[tuple[bool, bool]] | None,
                  names: Mapping[str, str] | None) -> str:
        parts = [p.describe(names) for p in self.prepare]
        parts += [_describe_pair(p, dtype, xp_name, copied[n] if copied is not None else None, names)
                  for n, p in enumerate(self.pairs)]
        final = self.pairs[-1].result if self.pairs else self.live[0] if self.live else ""
        into = "into the output" if final == self.output else \
            f"transposed {_named(final, names)}->{_named(self.output, names)} into the output"
        if not parts:
            return "copied " + into
        return "; ".join(parts) + "; " + into

    def run(self, operands: Sequence[Any], xp: Any = np, out: Any = None, accumulate: bool = False,
            calls: dict[str, int] | None = None, names: Mapping[str, str] | None = None) -> Any:
        """The product over `operands` (as `numpy.einsum(spec, *operands)`), or written (`=`) / added (`+=`)
        into `out` (an array of the output's shape; cast into its dtype as NumPy's `out=` and `+=` do).
        `calls` counts the description of what ran (its copies as they happened; letters written as
        `names`)."""
        return _execute(self, operands, xp, out, accumulate, calls, names)


def _named(letters: str, names: Mapping[str, str] | None) -> str:
    """Letters written as the variables they stand for: joined when each is one character, else in
    parentheses separated by spaces ("(io j)")."""
    if not names:
        return letters
    parts = [names.get(c, c) for c in letters]
    return "".join(parts) if all(len(x) == 1 for x in parts) else "(" + " ".join(parts) + ")"


def _describe_pair(p: Pair, dtype: Any, xp_name: str, copied: tuple[bool, bool] | None = None,
                   names: Mapping[str, str] | None = None) -> str:
    nb, m, n, k = p.sizes
    a_copy, b_copy = copied if copied is not None else (p.a_copy, p.b_copy)
    if p.mode == "gemm":
        what = f"[{m}x{k}] @ [{k}x{n}]"
        routine = _gemm_routine(dtype, m, n, k, nb, xp_name)
        if nb > 1:
            head = f"batched GEMM {nb} x {what}"
        else:
            head = f"GEMM {what}"
        copies = [f"operand {x} ({size} elements)" for x, c, size in
                  ((p.i + 1, a_copy, nb * m * k), (p.j + 1, b_copy, nb * k * n)) if c]
        return f"{head} by {routine}" + (f", copying {' and '.join(copies)}" if copies else "")
    if p.mode == "mul":
        pattern = f"{_named(p.a, names)},{_named(p.b, names)}->{_named(p.result, names)}"
        return f"broadcast multiply {pattern} by {xp_name}.multiply ({nb * m * n} elements)"
    if p.mode == "dot":
        if not (p.batch or p.left or p.right):
            return f"dot of {k} elements by {_dot_routine(dtype, k, xp_name)}"
        pattern = f"{_named(p.a, names)},{_named(p.b, names)}->{_named(p.result, names)}"
        return f"{nb * m * n} dots of {k} elements ({pattern}) by {xp_name}.einsum{_in_shares(p, xp_name)}"
    pattern = f"{_named(p.a, names)},{_named(p.b, names)}->{_named(p.result, names)}"
    return f"einsum loop {pattern} ({nb} x [{m}x{k}] @ [{k}x{n}]) by {xp_name}.einsum{_in_shares(p, xp_name)}"


def _in_shares(p: Pair, xp_name: str) -> str:
    """How an einsum loop's shares run, where it is split (`loop_shares`): ", in 2 shares on 2 threads"."""
    parts = loop_shares(p) if xp_name == "numpy" else 1
    return f", in {parts} shares on {parts} threads" if parts > 1 else ""


def _gemm_routine(dtype: Any, m: int, n: int, k: int, nb: int, xp_name: str) -> str:
    if xp_name != "numpy":
        return f"{xp_name}.matmul"
    if _numpy_pool(nb * m * n * k):
        return f"numpy.matmul on NumPy's {_USER_THREADS.get()} BLAS threads"
    dt = np.dtype(dtype)
    if (dt in (np.float32, np.float64) and tile_blas.library() is not None
            and m * n * k >= (tile_blas.MIN_WORK if nb == 1 else _SMALL_MATRIX)):
        return f"distal's OpenBLAS {'s' if dt == np.float32 else 'd'}gemm"
    return "numpy.matmul"


def _dot_routine(dtype: Any, k: int, xp_name: str) -> str:
    if xp_name != "numpy":
        return f"{xp_name}.dot"
    dt = np.dtype(dtype)
    if dt in (np.float32, np.float64) and tile_blas.library() is not None and k >= tile_blas.MIN_DOT:
        return f"distal's OpenBLAS {'s' if dt == np.float32 else 'd'}dot"
    return "numpy.dot"


# -- planning ----------------------------------------------------------------------------------------------


def _layout(x: Any) -> tuple[int, ...]:
    """The axes of `x` by decreasing stride (ties: in axis order): C order is (0, 1, ...)."""
    strides = getattr(x, "strides", None)
    if strides is None or len(strides) != x.ndim:
        return tuple(range(x.ndim))
    return tuple(sorted(range(x.ndim), key=lambda a: (-abs(strides[a]), a)))


def contraction(spec: str, operands: Sequence[Any]) -> Contraction:
    """The contraction of `spec` over arrays shaped and laid out as `operands` (cached by shapes and layouts)."""
    shapes = tuple(tuple(int(n) for n in x.shape) for x in operands)
    layouts = tuple(_layout(x) for x in operands)
    items = tuple(int(getattr(x, "itemsize", 8)) for x in operands)
    return _plan(spec, shapes, layouts, items)


def run(spec: str, operands: Sequence[Any], xp: Any = np, out: Any = None, accumulate: bool = False,
        calls: dict[str, int] | None = None) -> Any:
    """`contraction(spec, operands).run(...)`: the einsum `spec` over `operands` at BLAS speed."""
    return contraction(spec, operands).run(operands, xp, out, accumulate, calls)


@functools.lru_cache(maxsize=4096)
def _plan(spec: str, shapes: tuple[tuple[int, ...], ...], layouts: tuple[tuple[int, ...], ...],
          items: tuple[int, ...]) -> Contraction:
    inputs, output = spec.split("->")
    letters = inputs.split(",")
    if len(letters) != len(shapes):
        raise ValueError(f"expected {len(letters)} operands for {spec!r}, but found {len(shapes)}")
    extents: dict[str, int] = {}
    for ax, shape in zip(letters, shapes):
        if len(ax) != len(shape):
            raise ValueError(f"expected operand {ax!r} of {spec!r} to have {len(ax)} dimensions, but found {shape}")
        for c, n in zip(ax, shape):
            if extents.setdefault(c, n) != n:
                raise ValueError(f"expected one extent for {c!r} in {spec!r}, but found {extents[c]} and {n}")
    missing = [c for c in output if c not in extents]
    if missing or len(set(output)) != len(output):
        raise ValueError(f"expected distinct output letters that some operand has in {spec!r}")
    # memory order of each operand's letters (strides of the prepared operands follow the input's)
    order = [[ax[a] for a in lay] for ax, lay in zip(letters, layouts)]
    prepares = []
    live: list[str] = []
    for n, ax in enumerate(letters):
        diagonal = "".join(dict.fromkeys(ax)) if len(set(ax)) != len(ax) else ""
        current = diagonal or ax
        others = set(output).union(*(set(o) for m_, o in enumerate(letters) if m_ != n))
        summed = "".join(c for c in current if c not in others) if len(letters) > 1 else \
            "".join(c for c in current if c not in output)
        result = "".join(c for c in current if c not in summed)
        if diagonal or summed:
            prepares.append(Prepare(n, ax, diagonal, summed, result))
            order[n] = [c for c in dict.fromkeys(order[n]) if c in result]
        live.append(result)
    pairs: tuple[Pair, ...] = ()
    if len(live) > 1:
        itemsize = items[0] if items else 8
        paths = (_all_paths(len(live)) if len(live) <= 4
                 else [_path(tuple(live), output, tuple(sorted(extents.items())))])
        best: tuple[float, tuple[Pair, ...]] | None = None
        for path in paths:
            found = _pairs_of(path, live, order, output, extents, itemsize)
            cost = sum(_seconds(p, output if n == len(found) - 1 else None, itemsize) for n, p in enumerate(found))
            if best is None or cost < best[0]:
                best = (cost, found)
        assert best is not None
        pairs = best[1]
    return Contraction(spec, tuple(prepares), pairs, tuple(live), output, tuple(sorted(extents.items())),
                       layouts)


# rough rates of one core, only to choose between contraction orders: matrix products, other arithmetic, copies
_GEMM_RATE, _LOOP_RATE, _COPY_RATE = 40e9, 2e9, 1.5e9  # flop/s, flop/s, elements/s


def _seconds(p: Pair, output: str | None, itemsize: int) -> float:
    """About how long the pair takes: its arithmetic at its mode's rate plus the elements it copies."""
    rate = _GEMM_RATE if p.mode == "gemm" else _LOOP_RATE
    nb, m, n, k = p.sizes
    copied = (nb * m * k if p.a_copy else 0) + (nb * k * n if p.b_copy else 0)
    if output is not None and p.result != output:
        copied += nb * m * n
    return p.flops / rate + copied / _COPY_RATE + (2e-6 * nb if p.mode == "gemm" and nb > 1 else 0.0)


def _pairs_of(path: Sequence[tuple[int, int]], live: Sequence[str], order: Sequence[Sequence[str]], output: str,
              extents: dict[str, int], itemsize: int) -> tuple[Pair, ...]:
    """The pairs of a contraction order (positions in the shrinking list of operands, results appended)."""
    current = list(live)
    ids = list(range(len(live)))  # which original operand (or earlier pair) each live entry is
    current_order = [list(o) for o in order]
    pairs = []
    for step, (i, j) in enumerate(path):
        a, b = current[i], current[j]
        rest = [x for n, x in enumerate(current) if n not in (i, j)]
        keep = set(output).union(*(set(x) for x in rest))
        last = step == len(path) - 1
        p = _pair(i, j, a, b, keep, extents, current_order[i], current_order[j], output if last else None, itemsize)
        p = replace(p, i=ids[p.i], j=ids[p.j])  # positions -> ids (the pair may read j's operand first)
        p = replace(p, shapes=_shapes(p))
        if p.mode in ("dot", "einsum"):  # where its shares would be cut (`loop_shares`)
            memory = {a: current_order[i], b: current_order[j]}
            big = max(p.a, p.b, key=lambda x: _size(x, extents))
            p = replace(p, outer=memory[big][0] if memory[big] else "")
        pairs.append(p)
        for n in sorted((i, j), reverse=True):
            del current[n], current_order[n], ids[n]
        current.append(p.result)
        current_order.append(list(p.result))
        ids.append(len(live) + step)
    return tuple(pairs)


@functools.lru_cache(maxsize=8)
def _all_paths(n: int) -> list[tuple[tuple[int, int], ...]]:
    """Every pairwise contraction order of n operands (positions, results appended): 1, 3, 18 for 2, 3, 4."""
    if n == 1:
        return [()]
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            out += [((i, j), *rest) for rest in _all_paths(n - 1)]
    return out


@functools.lru_cache(maxsize=1024)
def _path(live: tuple[str, ...], output: str, extents: tuple[tuple[str, int], ...]) -> tuple[tuple[int, int], ...]:
    """Pairwise contraction order (positions in the shrinking list, the result appended), cheapest first."""
    if len(live) == 2:
        return ((0, 1),)
    ext = dict(extents)
    dummies = [np.broadcast_to(np.zeros(()), tuple(ext[c] for c in ax)) for ax in live]
    how = "optimal" if len(live) <= 4 else "greedy"
    found = np.einsum_path(",".join(live) + "->" + output, *dummies, optimize=(how, 1 << 62))[0][1:]
    out: list[tuple[int, int]] = []
    count = len(live)
    for step in found:
        pos = sorted(int(x) for x in step)
        while len(pos) > 2:  # more than two at once: pairwise, left to right
            out.append((pos[0], pos[1]))
            count -= 1
            pos = sorted([p - (p > pos[1]) - (p > pos[0]) for p in pos[2:]] + [count - 1])
        if len(pos) == 2:
            out.append((pos[0], pos[1]))
            count -= 1
    if not out:
        out = [(0, 1)] * (len(live) - 1)
    return tuple(out)


def _sorted_by(letters: Sequence[str], order: Sequence[str]) -> str:
    return "".join(sorted(letters, key=lambda c: order.index(c) if c in order else len(order)))


def _pair(i: int, j: int, a: str, b: str, keep: set[str], extents: dict[str, int], a_order: list[str],
          b_order: list[str], output: str | None, itemsize: int, _swapped: bool = False) -> Pair:
    """Plan one pair: its letter groups and their orders (fewest elements copied), the mode."""
    shared = [c for c in a if c in b]
    batch_set = [c for c in shared if c in keep]
    contracted_set = [c for c in shared if c not in keep]
    left_set = [c for c in a if c not in b]
    right_set = [c for c in b if c not in a]
    m, n = _size(left_set, extents), _size(right_set, extents)
    ext = tuple(sorted(extents.items()))
    # a stack of tiny matrices too is a batched GEMM: NumPy 2.4's matmul runs 200000 products of 3x3 in 12 ms where
    # numpy.einsum's loop takes 24 ms (20000 of 8x8: 1.8 against 9.9 ms)
    if not contracted_set:
        mode = "mul"
    elif m == 1 and n == 1:
        mode = "dot"
    else:
        mode = "gemm"
    if mode == "gemm" and not _swapped:
        # the pair read the other way round ((B^T A^T)^T: the right operand's letters as rows) may write the
        # output directly or copy less: plan both, keep the cheaper
        mine = _pair(i, j, a, b, keep, extents, a_order, b_order, output, itemsize, _swapped=True)
        other = _pair(j, i, b, a, keep, extents, b_order, a_order, output, itemsize, _swapped=True)
        return mine if _cost(mine, output) <= _cost(other, output) else other
    if mode != "gemm":  # a multiply, a dot or an einsum loop writes its result in any order: the output's
        order = output or ""
        return Pair(i, j, a, b, _sorted_by(batch_set, order or a_order), "", "", _sorted_by(left_set, order or a_order),
                    _sorted_by(right_set, order or b_order), _sorted_by(contracted_set, a_order), mode, False, False,
                    ext, False, False, order)
    # group orders: the output's where this pair gives the output, else each operand's memory order
    ref = output or ""
    a_strides = dict(zip(a_order, _c_strides([extents[c] for c in a_order], itemsize)))
    b_strides = dict(zip(b_order, _c_strides([extents[c] for c in b_order], itemsize)))
    a_shape = {c: extents[c] for c in a}
    b_shape = {c: extents[c] for c in b}
    best: tuple[float, Pair] | None = None
    for a_out in _outer_options(left_set, a_order):
        for b_out in _outer_options(right_set, b_order):
            left = [c for c in left_set if c not in a_out]
            right = [c for c in right_set if c not in b_out]
            options = itertools.product(
                sorted({_sorted_by(batch_set, ref or a_order), _sorted_by(batch_set, a_order)}),
                sorted({_sorted_by(left, a_order), _sorted_by(left, ref or a_order)}),
                sorted({_sorted_by(right, b_order), _sorted_by(right, ref or b_order)}),
                sorted({_sorted_by(contracted_set, a_order), _sorted_by(contracted_set, b_order)}))
            for bt, lf, rt, ct in options:
                a_ok, a_trans = _view_ok(lf, ct, a_shape, a_strides, itemsize)
                b_ok, b_trans = _view_ok(ct, rt, b_shape, b_strides, itemsize)
                p = Pair(i, j, a, b, bt, a_out, b_out, lf, rt, ct, mode, a_trans, b_trans, ext, not a_ok, not b_ok)
                cost = _cost(p, output)
                if best is None or cost < best[0]:
                    best = (cost, p)
    assert best is not None
    chosen = best[1]
    nb, m, n, _ = chosen.sizes
    if min(m, n) == 1 and (nb > 1 or chosen.a_copy or chosen.b_copy):
        # matrix-vector products: a copy reads and writes the matrix before GEMV reads it again, and a stack of
        # them calls GEMV per matrix; einsum's loop streams the operands once, as they lie (`ijab,jb->ia` at
        # extents 64, eager on NumPy operands: 5.5 ms, 94 ms copying the 16,777,216 elements of operand 1 first)
        return replace(chosen, mode="einsum", a_copy=False, b_copy=False)
    return chosen


def _cost(p: Pair, output: str | None) -> float:
    """Elements copied (operands read as matrices, the product transposed into the output) plus the calls."""
    nb, m, n, k = p.sizes
    cost = (nb * m * k if p.a_copy else 0) + (nb * k * n if p.b_copy else 0)
    if output is not None and p.result != output:
        cost += nb * m * n
    return float(cost + (_CALL_ELEMENTS * nb if nb > 1 else 0))


def _outer_options(free: list[str], order: list[str]) -> list[str]:
    """The free letters an operand may keep as outer stack axes: "" and each prefix of its memory order made
    of free letters (a loop of matrix products over them instead of a copy)."""
    prefix = ""
    for c in order:
        if c not in free:
            break
        prefix += c
    return [prefix[:n] for n in range(len(prefix) + 1) if n < len(free) or n == 0]


def _view_ok(rows: str, cols: str, shape: dict[str, int], strides: dict[str, int], itemsize: int
             ) -> tuple[bool, bool]:
    """Whether an operand with C-order `strides` (by letter) is read as (rows, cols) matrices without a copy,
    and whether as a transposed matrix."""
    r_ax, c_ax = list(rows), list(cols)
    letters = list(shape)
    full_shape = [shape[c] for c in letters]
    full_strides = [strides[c] for c in letters]
    idx = {c: n for n, c in enumerate(letters)}
    if not (_mergeable(full_shape, full_strides, [idx[c] for c in r_ax])
            and _mergeable(full_shape, full_strides, [idx[c] for c in c_ax])):
        return False, False
    nr = math.prod(shape[c] for c in r_ax)
    nc = math.prod(shape[c] for c in c_ax)
    sr = _group_stride(r_ax, shape, strides, itemsize)
    sc = _group_stride(c_ax, shape, strides, itemsize)
    if _matrix_ok(nr, nc, sr, sc, itemsize):
        return True, sr < sc
    return False, False


def _group_stride(axes: Sequence[str], shape: dict[str, int], strides: dict[str, int], itemsize: int) -> int:
    live = [c for c in axes if shape[c] != 1]
    return strides[live[-1]] if live else itemsize


# -- running -----------------------------------------------------------------------------------------------


def _blas_ready(m: Any) -> tuple[Any, bool]:
    """A matrix (or stack of them) BLAS reads without a copy: `m` itself, or a C-ordered copy."""
    if not isinstance(m, np.ndarray) or m.ndim < 2:
        return m, False
    rows, cols = m.shape[-2:]
    s_rows, s_cols = m.strides[-2:]
    if s_rows >= 0 and s_cols >= 0 and _matrix_ok(rows, cols, s_rows, s_cols, m.itemsize):
        return m, False
    return np.ascontiguousarray(m), True


def _run_pair(p: Pair, a: Any, b: Any, xp: Any, out: Any, accumulate: bool) -> tuple[Any, tuple[bool, bool]]:
    """The pair's product (letters `p.result`); with `out` (laid out as `p.result`), written or added there.
    Returns it with whether each operand was copied to be read as matrices."""
    sh = p.shapes if p.shapes is not None else _shapes(p)
    if p.mode == "mul":
        av = (a if sh.a_perm is None else xp.transpose(a, sh.a_perm)).reshape(sh.a_shape)
        bv = (b if sh.b_perm is None else xp.transpose(b, sh.b_perm)).reshape(sh.b_shape)
        if out is not None and not accumulate and xp is np and out.dtype == np.result_type(a, b):
            np.multiply(av, bv, out=out)
            return out, _NO_COPY
        return _deliver(av * bv, out, accumulate, xp), _NO_COPY
    if p.mode in ("dot", "einsum"):
        if p.mode == "dot" and not (p.batch or p.left or p.right):
            value = tile_blas.dot(a.reshape(-1), _transposed(b, p.b, p.a, xp).reshape(-1), xp)
            value = xp.asarray(value).reshape(())
        elif xp is np and (parts := loop_shares(p)) > 1:
            return _split_loop(p, parts, a, b, out, accumulate), _NO_COPY
        else:
            value = xp.einsum(f"{p.a},{p.b}->{p.result}", a, b)
        return _deliver(value, out, accumulate, xp), _NO_COPY
    # gemm: (stack..., rows, k) @ (stack..., k, cols), each operand read as stored or as a transposed matrix
    av, a_copy = _view(a, sh.a_perm, sh.a_shape, xp)
    bv, b_copy = _view(b, sh.b_perm, sh.b_shape, xp)
    if sh.a_swap:
        av = _swap_last(av, xp)
    if sh.b_swap:
        bv = _swap_last(bv, xp)
    av, more_a = _blas_ready(av)
    bv, more_b = _blas_ready(bv)
    copied = (a_copy or more_a, b_copy or more_b)
    if xp is not np:
        return _deliver(xp.matmul(av, bv).reshape(sh.result), out, accumulate, xp), copied
    stacked = len(sh.out_shape) > 2
    target = None
    if isinstance(out, np.ndarray):
        target = out.view()
        try:
            target.shape = sh.out_shape
        except AttributeError:
            target = None
    if not stacked and target is not None and _gemm(av, bv, target, accumulate) is not None:
        return out, copied
    if target is not None and not accumulate and out.dtype == np.result_type(av, bv):
        if stacked:
            _stacked_matmul(av, bv, target)
        else:
            np.matmul(av, bv, out=target)
        return out, copied
    value = _stacked_matmul(av, bv) if stacked else _gemm(av, bv, None, False)
    if value is None:
        value = np.matmul(av, bv)
    return _deliver(value.reshape(sh.result), out, accumulate, xp), copied


_SPLIT_FROM = 1 << 21  # multiply-adds of one product from which it is split over the BLAS threads (`_gemm`)
# multiply-adds of an eager call's product (a stack: all of it) from which distal's own kernels run it in shares
# rather than NumPy's matmul on NumPy's threads (`_numpy_pool`). Quiet, interleaved with numpy.einsum as
# bench/einsum.py --drop-in runs them (lead, load under 1): 640^3 took 4.7 ms on NumPy's pool and 5.5-6.0 in
# shares on distal's SkylakeX kernels beside NumPy's spinning worker; 1400^3 51 against 58 ms; 3000^3 464
# against 335 ms, where the kernels' 1.4x outweighs the worker's 0.1 s
OWN_FROM = 8e9
# within `on_user_threads`: the caller's BLAS threads, read once as it starts (threadpoolctl asks each library,
# 27 us right after work that evicted the caches); 0 outside it
_USER_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("distal_contract_user_threads", default=0)


@contextlib.contextmanager
def on_user_threads(yes: bool = True) -> Iterator[None]:
    """Within it, contractions run (and are described) as an eager call's do, on the caller's BLAS threads:
    products below `OWN_FROM` multiply-adds on NumPy's matmul with NumPy's own threads (`_numpy_pool`), large
    einsum loops in shares (`loop_shares`). Outside it (a Legate task, the NumPy backend) every product runs as
    before."""
    token = _USER_THREADS.set(max(_blas_threads(), 1) if yes else 0)
    try:
        yield
    finally:
        _USER_THREADS.reset(token)


def _pool_context() -> tuple[bool, int]:
    """What `_numpy_pool` and `loop_shares` depend on besides the product (part of a description's cache key)."""
    threads = _USER_THREADS.get()
    return threads > 0, threads


def _numpy_pool(macs: float) -> bool:
    """Whether a product of `macs` multiply-adds runs on NumPy's matmul with NumPy's own BLAS threads: in an
    eager call (`on_user_threads`) with several BLAS threads, below `OWN_FROM`, where distal loaded its own
    kernels (otherwise NumPy's matmul runs it anyway)."""
    return _USER_THREADS.get() > 1 and macs < OWN_FROM and tile_blas.library() is not None


def _gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None, accumulate: bool) -> np.ndarray | None:
    """`a @ b` of two matrices on `distal.tile_blas` (into `out`, or added to it), None where that GEMM does
    not run. With several BLAS threads a product of `_SPLIT_FROM` multiply-adds or more is split along its
    longer side of the result into one share per thread, each a GEMM on one BLAS thread (`_on_blas_threads`),
    as Legate's tasks split it: the threads meet once, not at every step of OpenBLAS's own threading, which
    under load from other programs costs a time slice each (at load 11: 640x640x640 12-19 ms split against
    40-47 ms on two threads; 85184x44x44 7-16 ms against 40-48 ms; 1400x1400x1400 107-154 against 119-192)."""
    m, k = a.shape
    n = b.shape[1]
    if _numpy_pool(m * n * k):
        return None  # the caller runs numpy.matmul, on NumPy's threads
    parts = _shares() if m * n * k >= _SPLIT_FROM else 1
    if parts <= 1 or max(m, n) < 2 * parts or tile_blas.library() is None or a.dtype != b.dtype \
            or a.dtype not in (np.float32, np.float64):
        return tile_blas.gemm(a, b, out=out, accumulate=accumulate)
    if out is None:
        out, accumulate = np.empty((m, n), dtype=a.dtype), False
    elif out.dtype != a.dtype or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return tile_blas.gemm(a, b, out=out, accumulate=accumulate)
    rows = m >= n
    cut = [(m if rows else n) * q // parts for q in range(parts + 1)]
    result = out

    def share(q: int) -> None:
        part = slice(cut[q], cut[q + 1])
        x, y, z = (a[part], b, result[part]) if rows else (a, b[:, part], result[:, part])
        if tile_blas.gemm(x, y, out=z, accumulate=accumulate) is None:
            if accumulate:
                z += np.matmul(x, y)
            else:
                np.matmul(x, y, out=z)

    _on_blas_threads([functools.partial(share, q) for q in range(parts)])
    return out


# elements of an einsum loop's larger operand (a pair in mode "dot" or "einsum") from which an eager call splits the
# loop along that operand's outermost letter, where the result keeps it, into one share per BLAS thread, each a
# numpy.einsum on its own Python thread: NumPy runs the loop on one thread. Quiet, 2 cores, each right after
# opt_einsum's call (as bench/einsum.py --drop-in runs them), two shares over one loop: `ijab,jb->ia` 0.84 of the
# time at 1M elements, 0.79 at 5.3M, 0.67 at 16.8M; `ij,ij->i` 1.07 at 1M, 0.97 at 4M, 0.89 at 16M, 0.83 at 36M;
# `ijk,jk->i` (k = 8) 1.01 at 8M, 0.99 at 18M. Beside NumPy's spinning BLAS worker (0.1 s after a threaded NumPy
# call: right after numpy.einsum(optimize=True), whose batched matmul runs threaded) the gain goes: `ijab,jb->ia` at
# 16.8M took 5.5-5.8 ms in two shares against 5.1-5.5 in one loop (taking chunks in turn changed nothing)
_LOOP_SPLIT_FROM = 1 << 22


def loop_parts(p: Pair, threads: int) -> int:
    """Into how many shares an einsum loop of pair `p` is split on `threads` threads (`_split_loop`): one per
    thread where its larger operand has `_LOOP_SPLIT_FROM` elements or more and the result keeps that operand's
    outermost letter, of an extent of at least that many; else 1."""
    if p.mode not in ("dot", "einsum") or not p.outer or p.outer not in p.result or threads <= 1:
        return 1
    ext = dict(p.extents)
    if max(_size(p.a, ext), _size(p.b, ext)) < _LOOP_SPLIT_FROM or ext[p.outer] < threads:
        return 1
    return threads


def loop_shares(p: Pair) -> int:
    """Into how many shares an einsum loop of pair `p` is split now: in an eager call (`on_user_threads`),
    `loop_parts` over the BLAS threads; else 1 (a Legate task's loop runs on its one thread)."""
    threads = _USER_THREADS.get()
    return loop_parts(p, min(threads, os.cpu_count() or 1)) if threads else 1


def _split_loop(p: Pair, parts: int, a: np.ndarray, b: np.ndarray, out: np.ndarray | None,
                accumulate: bool) -> np.ndarray:
    """The einsum loop of pair `p` in `parts` shares (`loop_shares`), each over a slice of its larger operand's
    outermost letter in memory (`p.outer`, which the result keeps: contiguous slices of that operand), each
    share a numpy.einsum on its own Python thread (`_on_blas_threads`), written into `out` where it can be
    (`=`, its dtype, not overlapping an operand), else into a new array delivered there."""
    ext = dict(p.extents)
    letter = p.outer
    dtype = np.result_type(a, b)
    direct = isinstance(out, np.ndarray) and not accumulate and out.dtype == dtype \
        and not np.may_share_memory(out, a) and not np.may_share_memory(out, b)
    target: np.ndarray = out if direct and out is not None else np.empty(tuple(ext[c] for c in p.result), dtype)
    cut = [ext[letter] * q // parts for q in range(parts + 1)]
    spec = f"{p.a},{p.b}->{p.result}"

    def part(x: np.ndarray, letters: str, q: int) -> np.ndarray:
        if letter not in letters:
            return x
        index: list[Any] = [slice(None)] * x.ndim
        index[letters.index(letter)] = slice(cut[q], cut[q + 1])
        view: np.ndarray = x[tuple(index)]
        return view

    def share(q: int) -> None:
        np.einsum(spec, part(a, p.a, q), part(b, p.b, q), out=part(target, p.result, q))

    _on_blas_threads([functools.partial(share, q) for q in range(parts)], blas=False)  # (einsum's loop: no BLAS)
    return target if direct or out is None else np.asarray(_deliver(target, out, accumulate, np))


_NO_COPY = (False, False)
_SMALL_MATRIX = 1 << 23  # multiply-adds of one product of a stack below which BLAS's own threads do not pay


class _Blas:
    """NumPy's BLAS threads, for stacks of small products (`_stacked_matmul`): a threadpoolctl controller and
    a pool of Python threads, each made on first use."""

    controller: Any = None
    pool: Any = None
    lock = threading.Lock()


def blas_threads() -> int:
    """How many threads NumPy's BLAS (and `distal.tile_blas`, which takes NumPy's count) runs a call on now in
    this thread: 1 inside a Legate task, which limits it; what an eager dt.einsum's matrix products get."""
    return _blas_threads()


def _blas_threads() -> int:
    """How many threads NumPy's BLAS runs a call on now (1 inside a Legate task, which limits it)."""
    return max((lib.num_threads for lib in _controller().lib_controllers), default=1)


def _shares() -> int:
    """Into how many shares a product is split over Python threads (`_on_blas_threads`): NumPy's BLAS threads,
    at most one per core (the pool has a thread per core but this one)."""
    return min(_blas_threads(), os.cpu_count() or 1)


def _controller() -> Any:
    """threadpoolctl's controller of the BLAS libraries (made on first use, distal.tile_blas's included)."""
    with _Blas.lock:
        if _Blas.controller is None:
            from threadpoolctl import ThreadpoolController

            tile_blas.library()  # loaded first, so that the controller limits it too (`_on_blas_threads`)
            _Blas.controller = ThreadpoolController().select(user_api="blas")
        return _Blas.controller


def _each_on_tile_blas(a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """A stack of large products one by one on `distal.tile_blas` (its kernels where NumPy's lack AVX-512; a
    Python loop costs nothing beside products this large), each on NumPy's matmul where that GEMM does not run;
    with several BLAS threads the stack is split into one share per thread, each share's products on one BLAS
    thread (`_on_blas_threads`), as Legate's tasks run them: the threads meet once per call, not once per
    product (under load from other programs, a time slice each: 64 products of 960x64x960 in float32 took
    1.8-3.9 s on two threads per product at load 12-14, where numpy.einsum took 0.6-1.0 s)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if out is None:
        out = np.empty((*batch, a.shape[-2], b.shape[-1]), dtype=a.dtype)
    av = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    bv = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    products = list(np.ndindex(*batch))

    def run(share: Sequence[tuple[int, ...]]) -> None:
        for idx in share:
            if tile_blas.gemm(av[idx], bv[idx], out=out[idx]) is None:
                np.matmul(av[idx], bv[idx], out=out[idx])

    parts = min(_shares(), len(products))
    if parts <= 1:
        run(products)
    else:
        bounds = [len(products) * q // parts for q in range(parts + 1)]
        _on_blas_threads([functools.partial(run, products[bounds[q]:bounds[q + 1]]) for q in range(parts)])
    return out


def _on_blas_threads(shares: Sequence[Any], blas: bool = True) -> None:
    """Run each of `shares` (callables) on its own Python thread (the first on this one), with every BLAS
    library threadpoolctl finds (NumPy's, distal.tile_blas's) on one thread meanwhile where they call BLAS
    (`blas`)."""
    with _Blas.lock:
        if _Blas.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _Blas.pool = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1),
                                            thread_name_prefix="distal-blas")
    with _controller().limit(limits=1) if blas else contextlib.nullcontext():
        others = [_Blas.pool.submit(share) for share in shares[1:]]
        shares[0]()
        for f in others:
            f.result()


def _stacked_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`numpy.matmul(a, b)` of stacks of matrices (into `out` where given); where each product is small, the
    stack is split into one share per BLAS thread, each share run on one Python thread with BLAS on one
    thread.

    OpenBLAS runs each product of a stack on all its threads, which meet after every product: microseconds
    on an idle core, a scheduler's time slice when other processes hold the cores. At load 6-8 on this
    machine's 2 cores, `bhqd,bhkd->bhqk` (64 products of 256x64x256, float32) took 1,000 ms that way, in
    numpy.einsum(optimize=True) and in an eager dt.einsum alike, against 16-18 ms for the same stack in
    Legate's tasks (one BLAS thread each); issue 33 saw 370-520 ms against 14 ms. Split, the threads meet
    once per call."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    lead = max(a.shape[0], b.shape[0])
    if _numpy_pool(math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) * m * n * k):
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    if m * n * k >= _SMALL_MATRIX and tile_blas.library() is not None and a.dtype == b.dtype \
            and a.dtype in (np.float32, np.float64):
        return _each_on_tile_blas(a, b, out)
    threads = _blas_threads() if m * n * k < _SMALL_MATRIX and lead > 1 else 1
    if threads <= 1:
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    if out is None:
        out = np.empty((*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), m, n), dtype=np.result_type(a, b))
    parts = min(threads, lead)
    bounds = [lead * q // parts for q in range(parts + 1)]

    def share(q: int) -> None:
        cut = slice(bounds[q], bounds[q + 1])
        np.matmul(a[cut] if a.shape[0] > 1 else a, b[cut] if b.shape[0] > 1 else b, out=out[cut])

    _on_blas_threads([functools.partial(share, q) for q in range(parts)])
    return out


def _perm(letters: str, want: str) -> tuple[int, ...] | None:
    perm = tuple(letters.index(c) for c in want)
    return None if perm == tuple(range(len(perm))) else perm


def _shapes(p: Pair) -> _Shapes:
    """How the pair's operands are viewed and its result shaped (see `_Shapes`)."""
    ext = dict(p.extents)
    result = tuple(ext[c] for c in p.result)
    if p.mode == "mul":
        res = p.result
        in_a, in_b = "".join(c for c in res if c in p.a), "".join(c for c in res if c in p.b)
        return _Shapes(_perm(p.a, in_a), tuple(ext[c] if c in p.a else 1 for c in res), False,
                       _perm(p.b, in_b), tuple(ext[c] if c in p.b else 1 for c in res), False, result, result, True)
    if p.mode != "gemm":
        return _Shapes(None, (), False, None, (), False, result, result, True)

    def stack(x: str, own: str, ones_at: int, ones: int, rows: str, cols: str) -> tuple[tuple[int, ...] | None,
                                                                                          tuple[int, ...]]:
        lead = [ext[c] for c in own]
        lead[ones_at:ones_at] = [1] * ones
        return _perm(x, own + rows + cols), (*lead, math.prod(ext[c] for c in rows),
                                              math.prod(ext[c] for c in cols))

    nb_a, nb_b = len(p.batch) + len(p.a_outer), len(p.batch)
    a_rows, a_cols = (p.contracted, p.left) if p.a_trans else (p.left, p.contracted)
    b_rows, b_cols = (p.right, p.contracted) if p.b_trans else (p.contracted, p.right)
    a_perm, a_shape = stack(p.a, p.batch + p.a_outer, nb_a, len(p.b_outer), a_rows, a_cols)
    b_perm, b_shape = stack(p.b, p.batch + p.b_outer, nb_b, len(p.a_outer), b_rows, b_cols)
    out_shape = (*(ext[c] for c in p.batch + p.a_outer + p.b_outer), math.prod(ext[c] for c in p.left),
                 math.prod(ext[c] for c in p.right))
    return _Shapes(a_perm, a_shape, p.a_trans, b_perm, b_shape, p.b_trans, out_shape, result, True)


def _view(x: Any, perm: tuple[int, ...] | None, shape: tuple[int, ...], xp: Any) -> tuple[Any, bool]:
    """`x` transposed by `perm` and reshaped to `shape`: a view where its layout allows it, else a C-ordered
    copy; with whether it was copied."""
    t = x if perm is None else xp.transpose(x, perm)
    if isinstance(t, np.ndarray):
        view = t.view()
        try:
            view.shape = shape
            return view, False
        except AttributeError:
            return np.ascontiguousarray(t).reshape(shape), True
    return t.reshape(shape), False


def _matching(a: str, b: str) -> str:
    """`b`'s letters in `a`'s order (a dot of two operands with the same letters reads them alike)."""
    return "".join(c for c in a if c in b)


def _transposed(x: Any, letters: str, want: str, xp: Any) -> Any:
    """`x` (axes `letters`) with its axes in the order `want` (a view)."""
    if letters == want:
        return x
    return xp.transpose(x, [letters.index(c) for c in want])


def _swap_last(x: Any, xp: Any) -> Any:
    """The matrices of a stack transposed (a view)."""
    order = list(range(x.ndim))
    order[-2:] = order[-1], order[-2]
    return xp.transpose(x, order)


def _deliver(value: Any, out: Any, accumulate: bool, xp: Any) -> Any:
    """`value` written (`=`) or added (`+=`) into `out`, cast to its dtype as NumPy's `out=` and `+=` do
    (a complex value into a real output keeps its real part); `value` itself when there is no `out`."""
    if out is None:
        return value
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "c" and out.dtype.kind != "c":
        value = value.real
    if accumulate:
        if xp is np:
            np.add(out, value, out=out, casting="unsafe")
        else:
            out += value.astype(out.dtype) if value.dtype != out.dtype else value
    else:
        if xp is np:
            np.copyto(out, value, casting="unsafe")
        else:
            out[...] = value
    return out


def _xp_name(xp: Any) -> str:
    return str(getattr(xp, "__name__", "numpy")).split(".")[0]


def _count(calls: dict[str, int] | None, what: str) -> None:
    if calls is not None:
        calls[what] = calls.get(what, 0) + 1


def _execute(c: Contraction, operands: Sequence[Any], xp: Any, out: Any, accumulate: bool,
             calls: dict[str, int] | None, names: Mapping[str, str] | None = None) -> Any:
    arrays = list(operands)
    dtype = np.result_type(*arrays) if arrays else np.dtype(np.float64)
    if any(n == 0 for _, n in c.extents):
        shape = tuple(dict(c.extents)[x] for x in c.output)
        _count(calls, f"nothing to compute (an extent is zero); zeros {list(shape)}")
        value = xp.zeros(shape, dtype=dtype)
        return _deliver(value, out, accumulate, xp) if out is not None else value
    for prep in c.prepare:
        arrays[prep.index] = prep.run(arrays[prep.index], xp)
    copied: list[tuple[bool, bool]] = []
    if not c.pairs:
        if calls is not None:
            _count(calls, c.describe(dtype, _xp_name(xp), copied, names))
        value = _transposed(arrays[0], c.live[0], c.output, xp)
        return _deliver(value, out, accumulate, xp) if out is not None else value
    live = list(arrays)
    ids = list(range(len(c.live)))  # which operand (or earlier pair) each live array is
    for step, p in enumerate(c.pairs):
        i, j = ids.index(p.i), ids.index(p.j)
        last = step == len(c.pairs) - 1
        direct = last and out is not None and p.result == c.output
        value, flags = _run_pair(p, live[i], live[j], xp, out if direct else None, accumulate)
        copied.append(flags)
        for n in sorted((i, j), reverse=True):
            del live[n], ids[n]
        live.append(value)
        ids.append(len(c.live) + step)
    if calls is not None:
        _count(calls, c.describe(dtype, _xp_name(xp), copied, names))
    value = live[0]
    if out is not None and c.pairs[-1].result == c.output:
        return out
    value = _transposed(value, c.pairs[-1].result, c.output, xp)
    return _deliver(value, out, accumulate, xp) if out is not None else value


def work(spec: str, extents: dict[str, int], itemsize: int = 8) -> tuple[str, float]:
    """What a product block over these extents costs the time model: ("GEMM" when a matrix product runs,
    else "GENERIC") and its operations, for operands laid out in C order (as tiles are)."""
    c = _planned_c(spec, extents, itemsize)
    return c.routine, c.flops


def largest_product(spec: str, extents: dict[str, int], itemsize: int = 8) -> float:
    """The multiply-adds of the largest matrix product (a stack: all of it) the contraction of `spec` over
    these extents runs, operands in C order: what `_numpy_pool` decides by (0 where no GEMM runs)."""
    c = _planned_c(spec, extents, itemsize)
    return float(max((math.prod(p.sizes) for p in c.pairs if p.mode == "gemm"), default=0))


def split_loops(spec: str, extents: dict[str, int], itemsize: int, threads: int) -> float:
    """The share of the operations of the contraction of `spec` over these extents (operands in C order) that
    runs in einsum loops an eager call splits over `threads` threads (`loop_parts`)."""
    c = _planned_c(spec, extents, itemsize)
    split = sum(p.flops for p in c.pairs if loop_parts(p, threads) > 1)
    return split / c.flops if c.flops else 0.0


def fresh_arrays(spec: str, extents: dict[str, int], itemsize: int = 8) -> list[int]:
    """The bytes of each fresh array the contraction of `spec` writes besides its output, operands in C order:
    each operand copied to be read as matrices, and each pair's product but the last (which is written into
    the output where its letters are the output's)."""
    c = _planned_c(spec, extents, itemsize)
    sizes: list[int] = []
    for n, p in enumerate(c.pairs):
        nb, m, cols, k = p.sizes
        sizes += [nb * m * k * itemsize] if p.a_copy else []
        sizes += [nb * k * cols * itemsize] if p.b_copy else []
        if n < len(c.pairs) - 1 or p.result != c.output:
            sizes.append(nb * m * cols * itemsize)
    return sizes


def _planned_c(spec: str, extents: dict[str, int], itemsize: int) -> Contraction:
    inputs, _ = spec.split("->")
    shapes = tuple(tuple(int(extents[c]) for c in ax) for ax in inputs.split(","))
    layouts = tuple(tuple(range(len(s))) for s in shapes)
    return _plan(spec, shapes, layouts, (itemsize,) * len(shapes))
