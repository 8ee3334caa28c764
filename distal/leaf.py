"""Leaf kernels for `substitute`: what a loop nest's body becomes on one processor.

A leaf matches an assignment by its canonical einsum pattern: index variables
renamed a, b, c, ... in order of first appearance (output first).

Each leaf carries its implementation for an array namespace `xp` (NumPy on
CPU tiles, CuPy on GPU tiles), shaped as the paper schedules the leaves
(section 7.2.1) so that BLAS does the work. Matrix products of float32 and
float64 NumPy tiles run on `distal.tile_blas` (the CPU's AVX-512 kernels
where NumPy's OpenBLAS does not use them; NumPy's BLAS otherwise):

* GEMM: one `matmul`;
* TTM (`abd,dc->abc`): the tile reshaped to (a*b, d), one `matmul`;
* MTTKRP (`acd,cb,db->ab`): a `matmul` per block of c, against the block's
  Khatri-Rao product of the factor matrices (reshaped (a, c*d) tile), or,
  when the tile has fewer rows than d, `matmul` of the (a*c, d) tile with
  the second factor per block of a, then the element-wise product with the
  first factor summed over c; the block sizes keep the intermediate about
  `_BLOCK_ELEMENTS` elements;
* TTV (`abc,c->ab`) and INNERPROD (`abc,abc->`): bandwidth-bound reductions
  that stream each tile once, as a matrix-vector and a vector-vector
  `matmul` of reshaped views (no conjugation).

Reshapes are views when the tile's layout allows it (a copy otherwise).
`Leaf.compute` returns the pattern as a new array (the reference executor
runs substituted blocks with it); `Leaf.compute_into` writes (`=`) or adds
(`+=`) it into an output view, cast into the output's dtype as NumPy's
`out=` and `+=` do (task bodies call it).

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (2, 2)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> GEMM.matches(A.assignment.lhs, A.assignment.rhs)
True
>>> import numpy as np
>>> GEMM.compute(np.eye(2), np.ones((2, 2)))
array([[1., 1.],
       [1., 1.]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal import contract, tile_blas
from distal.errors import ScheduleError
from distal.notation.ast import Access, Expr, IndexVar
from distal.notation.visit import product_factors

__all__ = [
    "BATCHED_GEMM", "GEMM", "GENERIC", "INNERPROD", "LEAVES", "MTTKRP", "TTM", "TTV", "Leaf", "einsum_pattern", "get",
    "register",
]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _factors(e: Expr) -> list[Access] | None:
    factors = product_factors(e)
    return [f for f in factors if isinstance(f, Access)] if all(isinstance(f, Access) for f in factors) else None


def einsum_pattern(lhs: Access, rhs: Expr, within: Collection[IndexVar] | None = None) -> str | None:
    """The canonical einsum pattern of `lhs = rhs`, or None if rhs is no product of accesses.

    With `within`, the pattern of one block of loops over those variables: the others are fixed outside
    the block and drop out (C(b,i,j) = A(b,i,k) * B(b,k,j) within {i, j, k} is GEMM's ac,cb->ab).
    """
    factors = _factors(rhs)
    if factors is None:
        return None
    names: dict[IndexVar, str] = {}
    for a in (lhs, *factors):
        for v in a.indices:
            if within is not None and v not in within:
                continue
            if v not in names:
                if len(names) == len(_LETTERS):
                    return None
                names[v] = _LETTERS[len(names)]

    def sub(a: Access) -> str:
        return "".join(names[v] for v in a.indices if v in names)

    return ",".join(sub(a) for a in factors) + "->" + sub(lhs)


_BLOCK_ELEMENTS = 1 << 19  # elements of an MTTKRP intermediate block (4 MiB of float64)


def _contract(pattern: str, xp: Any, *operands: Any) -> Any:
    """Any product pattern as `distal.contract` runs it: GEMMs after reshapes, pairwise in the cheapest order."""
    return contract.contraction(pattern, operands).run(operands, xp)


def _matmul(pattern: str, xp: Any, b: Any, c: Any) -> Any:
    return tile_blas.matmul(b, c, xp)


def _ttv(pattern: str, xp: Any, b: Any, c: Any) -> Any:
    """`abc,c->ab`: one matrix-vector product of the (a*b, c) tile, streamed once."""
    a_, b_, c_ = b.shape
    return xp.matmul(b.reshape(a_ * b_, c_), c).reshape(a_, b_)


def _innerprod(pattern: str, xp: Any, b: Any, c: Any) -> Any:
    """`abc,abc->`: one vector-vector product of the flattened tiles (no conjugation, as einsum).

    `dot`, not `matmul`: NumPy's `matmul` of two 1-D arrays holds the GIL for
    the whole product (measured: another thread made no progress for all
    0.14-0.43 s of a 60M-element product; `dot` and 2-D `matmul` release
    it), so the tasks of the other processors could not start meanwhile.
    """
    return tile_blas.dot(b.reshape(-1), c.reshape(-1), xp)


def _ttm(pattern: str, xp: Any, b: Any, c: Any) -> Any:
    """`abd,dc->abc`: one matrix product of the (a*b, d) tile with the (d, c) matrix."""
    a_, b_, d_ = b.shape
    return tile_blas.matmul(b.reshape(a_ * b_, d_), c, xp).reshape(a_, b_, c.shape[1])


def _mttkrp(pattern: str, xp: Any, b: Any, c: Any, d: Any) -> Any:
    """`acd,cb,db->ab`: matrix products on reshaped tiles, blocked so the intermediate stays small.

    Khatri-Rao: for a block of c, K[c*d, b] = c[c, b] * d[d, b], then
    out += B[a, (c, d)] @ K (B's block reshaped: a view on a C-ordered tile).
    When a < d the intermediate B @ d is smaller: for a block of a,
    T[a, c, b] = B[(a, c), d] @ d[d, b], then out[a, b] = sum_c T * c.
    """
    na, nc, nd = b.shape
    nb = c.shape[1]
    if na >= nd:
        step = max(1, _BLOCK_ELEMENTS // max(1, nd * nb))
        out = None
        for lo in range(0, nc, step):
            hi = min(nc, lo + step)
            krp = (c[lo:hi].reshape(hi - lo, 1, nb) * d.reshape(1, nd, nb)).reshape((hi - lo) * nd, nb)
            part = tile_blas.matmul(b[:, lo:hi, :].reshape(na, (hi - lo) * nd), krp, xp)
            out = part if out is None else out + part
        return out if out is not None else xp.zeros((na, nb), dtype=b.dtype)
    step = max(1, _BLOCK_ELEMENTS // max(1, nc * nb))
    parts = []
    for lo in range(0, na, step):
        hi = min(na, lo + step)
        t = tile_blas.matmul(b[lo:hi].reshape((hi - lo) * nc, nd), d, xp).reshape(hi - lo, nc, nb)
        parts.append(_sum_axis1(t * c.reshape(1, nc, nb)))
    if not parts:
        return xp.zeros((na, nb), dtype=b.dtype)
    if len(parts) == 1:
        return parts[0]
    whole = xp.zeros((na, nb), dtype=parts[0].dtype)
    for n, lo in enumerate(range(0, na, step)):
        whole[lo:lo + step] = parts[n]
    return whole


def _sum_axis1(x: Any) -> Any:
    """`x` summed over axis 1 in its own dtype, as einsum sums (NumPy's `sum` widens small integers)."""
    total = x.sum(axis=1, dtype=x.dtype) if isinstance(x, np.ndarray) else x.sum(axis=1)
    return total if total.dtype == x.dtype else total.astype(x.dtype)


def _add(out: Any, value: Any, xp: Any) -> None:
    """`out += value` computed in the promotion of both dtypes, then cast into `out` (NumPy's `+=`)."""
    if xp is np:
        np.add(out, value, out=out, casting="unsafe")
    elif getattr(value, "dtype", out.dtype) == out.dtype:
        out += value
    else:
        out[...] = out + value


def _matmul_into(out: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool) -> None:
    """`out = b @ c` or `out += b @ c` (NumPy), cast into `out` as `out=` and `+=` do.

    One GEMM into `out` on `tile_blas` where it runs (`=` or `+=`, beta = 1),
    else straight into `out` when it is `=` of the product's dtype; otherwise by
    blocks of rows through one small buffer (about `_BLOCK_ELEMENTS`), so
    an accumulating product makes no output-sized temporary and adds while
    the block is in cache (NumPy cannot ask BLAS for `C += A B`).
    """
    if tile_blas.gemm(b, c, out=out, accumulate=accumulate) is not None:
        return
    dtype = np.result_type(b, c)
    if not accumulate and dtype == out.dtype:
        np.matmul(b, c, out=out)
        return
    rows, cols = out.shape
    step = max(1, _BLOCK_ELEMENTS // max(1, cols))
    buffer = np.empty((min(step, rows), cols), dtype=dtype)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        part = buffer[:hi - lo]
        np.matmul(b[lo:hi], c, out=part)
        if accumulate:
            np.add(out[lo:hi], part, out=out[lo:hi], casting="unsafe")
        else:
            np.copyto(out[lo:hi], part, casting="unsafe")


def _matrices(operands: tuple[Any, ...]) -> bool:
    """Whether the operands are a NumPy array of two or more dimensions and a NumPy matrix or vector."""
    if len(operands) != 2:
        return False
    b, c = operands
    return isinstance(b, np.ndarray) and b.ndim >= 2 and isinstance(c, np.ndarray) and c.ndim in (1, 2)


def _matvec_into(out: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool) -> None:
    """`out = b @ c` or `out += b @ c` for a vector `c` (NumPy), cast into `out` as `out=` and `+=` do.

    Straight into `out` when it is `=` of the product's dtype (no temporary, the tile read once);
    otherwise through one output-sized temporary (a vector: small next to the tile `b`).
    """
    if not accumulate and np.result_type(b, c) == out.dtype:
        np.matmul(b, c, out=out)
        return
    value = np.matmul(b, c)
    if accumulate:
        np.add(out, value, out=out, casting="unsafe")
    else:
        np.copyto(out, value, casting="unsafe")


def _out_view(out: Any, shape: tuple[int, ...]) -> Any:
    """`out` as a C-contiguous NumPy view of `shape` (writes reach `out`), or None."""
    if not isinstance(out, np.ndarray) or not out.flags.c_contiguous:
        return None
    view = out.view()
    try:
        view.shape = shape  # raises rather than copy
    except AttributeError:
        return None
    return view


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf kernel: a name, the einsum pattern it computes (None: any statement), its NumPy kernel.

    `kernel(pattern, xp, *operands)` computes `pattern` over the operands with
    the array namespace `xp`; `compute` is how callers run it.
    """

    name: str
    pattern: str | None
    kernel: Callable[..., Any] = field(default=_contract, repr=False, compare=False)
    how: str = field(default="implementation", compare=False)
    """What the leaf runs on the tiles, in words (plans' explain reports it)."""
    matmul_into: bool = field(default=False, compare=False)
    """Whether the pattern is one matrix product of the first operand's rows (all but its last axis)
    with the second operand (a matrix or a vector): then NumPy tiles are multiplied straight into the
    output tile."""
    tile_products: str = field(default="", compare=False)
    """Which of `distal.tile_blas`'s routines its float32/float64 NumPy tiles' products run on: "gemm"
    (matrix products), "dot" (INNERPROD's dot), or "" (none; explain() names that BLAS)."""

    @property
    def contracts(self) -> bool:
        """Whether the leaf computes its pattern with `distal.contract` (planned per tile shape)."""
        return self.kernel is _contract

    def compute(self, *operands: Any, pattern: str | None = None, xp: Any = np) -> Any:
        """The leaf's pattern over `operands` (their axes in the pattern's order), as one array.

        GENERIC takes the pattern to compute as `pattern` (any einsum
        pattern of a product); the others compute their own. The result has
        NumPy's promoted dtype of the operands, as `numpy.einsum` gives.
        """
        spec = self.pattern if self.pattern is not None else pattern
        if spec is None or (pattern is not None and pattern != spec):
            raise ScheduleError(f"expected the pattern {self.pattern} for leaf {self.name}, but found {pattern}")
        inputs = spec.split("->")[0].split(",")
        if len(inputs) != len(operands) or any(len(ax) != getattr(op, "ndim", -1) for ax, op in zip(inputs, operands)):
            shapes = ", ".join(str(getattr(op, "shape", "?")) for op in operands)
            raise ScheduleError(f"expected operands of pattern {spec} for leaf {self.name}, but found shapes {shapes}")
        return self.kernel(spec, xp, *operands)

    def compute_into(self, out: Any, *operands: Any, accumulate: bool = False, xp: Any = np,
                     calls: dict[str, int] | None = None) -> None:
        """Write (`=`) or add (`+=`) the leaf's pattern over `operands` into the output view `out`.

        The value is computed in the operands' dtype (the caller converts
        them to the statement's) and cast into `out` unchecked, as NumPy's
        `out=` of einsum and `+=` do. On NumPy tiles, GEMM, TTM and TTV write
        their matrix (or matrix-vector) product straight into a contiguous
        `out` of its dtype (no temporary); GEMM and TTM add theirs by blocks
        of rows through a small buffer.
        """
        if self.pattern is None:
            raise ScheduleError("expected a leaf with its own pattern for compute_into, but found GENERIC")
        if self.contracts:  # planned per tile shape, written straight into `out` where it can
            contract.contraction(self.pattern, operands).run(operands, xp, out=out, accumulate=accumulate, calls=calls)
            return
        if xp is np and self.matmul_into and _matrices(operands):
            b, c = operands
            rows = math.prod(b.shape[:-1])
            cols = c.shape[-1] if c.ndim == 2 else 1
            target = _out_view(out, (rows, c.shape[-1]) if c.ndim == 2 else (rows,))
            if target is not None and b.shape[-1] == c.shape[0] and out.size == rows * cols:
                into = _matmul_into if c.ndim == 2 else _matvec_into
                into(target, b.reshape(rows, b.shape[-1]), c, accumulate)
                return
        value = self.compute(*operands, xp=xp)
        if accumulate:
            _add(out, value, xp)
        else:
            out[...] = value

    def matches(self, lhs: Access, rhs: Expr, within: Collection[IndexVar] | None = None) -> bool:
        """Whether `lhs = rhs` has the leaf's pattern (with `within`: over those variables, the others fixed)."""
        if self.pattern is None:
            return True
        return einsum_pattern(lhs, rhs, within) == self.pattern

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"dt.leaf.{self.name}"


LEAVES: dict[str, Leaf] = {}


def register(leaf: Leaf) -> Leaf:
    """Add `leaf` to the leaves `get` and `substitute` know (its name, upper case, is the key); returns it.

    Adding a leaf is one call: its name, its canonical einsum pattern (see
    `einsum_pattern`) and its kernel `kernel(pattern, xp, *operands)` over
    the array namespace `xp` (NumPy on CPU tiles, CuPy on GPU tiles). Task
    bodies run it on every block whose pattern is the leaf's.
    """
    key = leaf.name
    if key.upper() != key or key in LEAVES:
        raise ValueError(f"expected a new upper-case leaf name, but found {leaf.name!r} (known: {', '.join(LEAVES)})")
    LEAVES[leaf.name] = leaf
    return leaf


GEMM = register(Leaf("GEMM", "ac,cb->ab", _matmul, "matmul", matmul_into=True, tile_products="gemm"))
TTV = register(Leaf("TTV", "abc,c->ab", _ttv, "matrix-vector matmul of the reshaped tile", matmul_into=True))
TTM = register(Leaf("TTM", "abd,dc->abc", _ttm, "matmul of the reshaped tile", matmul_into=True,
                     tile_products="gemm"))
MTTKRP = register(Leaf("MTTKRP", "acd,cb,db->ab", _mttkrp, "matmuls against blocks of the Khatri-Rao product",
                        tile_products="gemm"))
INNERPROD = register(Leaf("INNERPROD", "abc,abc->", _innerprod, "vector-vector dot of the flattened tiles",
                           tile_products="dot"))
BATCHED_GEMM = register(Leaf("BATCHED_GEMM", "abd,adc->abc", _contract,
                             "batched matmul (one GEMM per index of the batch loop, distal.contract)",
                             tile_products="gemm"))
GENERIC = register(Leaf("GENERIC", None, _contract, "a contraction planned per tile shape (distal.contract)"))


def get(name: str) -> Leaf:
    """The leaf kernel called `name`; the error lists the valid names."""
    try:
        return LEAVES[name.upper()]
    except KeyError:
        raise ScheduleError(
            f"expected a leaf kernel ({', '.join(LEAVES)}), but found {name!r}"
        ) from None
