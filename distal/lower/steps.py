"""The steps of a compiled task body (see `distal.lower.task_body`): what one launch point runs, worked out once.

A step runs on the point's arrays by slot (operands in argument order, then
workspaces): a slice-mode block whose views' indices, leaf or einsum spec
and output axes were worked out when the point was first walked
(`SliceStep`, its right side a `BlockValue`), an index-mode block with its
points' index values (`IndexStep`), or a workspace's fresh zeros
(`ZeroStep`). The calls go to the tiles' array namespace `xp`.

explain() works a point's steps out on stand-in arrays that hold no data
(`stand_in`) and words the calls they would run (`calls_of`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from distal import contract
from distal.cin.blocks import operand, run_index_block, store
from distal.cin.statements import Assign
from distal.leaf import Leaf
from distal.notation.ast import Access, Add, BinaryOp, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum
from distal.notation.variable import TensorVar
from distal.notation.visit import ExprVisitor, product_factors

__all__ = ["LETTERS", "BlockValue", "Broadcast", "Counts", "IndexStep", "SliceStep", "Step", "View", "ZeroStep",
           "calls_of", "canonical", "is_product", "stand_in", "to_axes"]

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


CHUNK = 1 << 18  # elements of an output chunk a broadcast expression computes at a time (2 MiB of float64)


def _count(calls: dict[str, int], what: str) -> None:
    calls[what] = calls.get(what, 0) + 1


class Counts(NamedTuple):
    """What the steps of a task body ran: blocks per leaf (by name), and each call as explain() words it."""

    leaves: dict[str, int]  # blocks run by each leaf's own implementation (`Leaf.compute_into`)
    ran: dict[str, int]  # the calls the blocks ran (`distal.contract`'s and the leaves' descriptions)


class Step:
    """One step of a launch point's compiled program: `run(tiles, xp, counts)` on the point's tiles by slot,
    counting what it ran in `counts`."""

    __slots__ = ()

    def run(self, tiles: list[Any], xp: Any, counts: Counts) -> None:
        raise NotImplementedError(type(self).__name__)

    def uses(self, slot: int) -> bool:
        """Whether the step reads or writes the array at `slot`."""
        raise NotImplementedError(type(self).__name__)

    def writing(self, tiles: list[Any]) -> Step | None:
        """This step writing (`=`) the whole array it would add into, when it may run on an array that holds
        no data yet: it writes every element of it and reads nothing from it. None when it cannot."""
        return None


class ZeroStep(Step):
    """A workspace's fresh zeros (`where`)."""

    __slots__ = ("dtype", "shape", "slot")

    def __init__(self, slot: int, shape: tuple[int, ...], dtype: Any) -> None:
        self.slot, self.shape, self.dtype = slot, shape, dtype

    def run(self, tiles: list[Any], xp: Any, counts: Counts) -> None:
        tiles[self.slot] = xp.zeros(self.shape, dtype=self.dtype)

    def uses(self, slot: int) -> bool:
        return slot == self.slot


View = tuple[int, tuple[Any, ...], str]  # a tile's slot, the index of the block's view into it, the view's axes


class BlockValue:
    """A slice block's right side over its views (not run as a leaf into the output): (value, its axes).

    A product is one contraction (`distal.contract`: GEMMs after reshapes, pairwise in the cheapest order;
    or a scaled leaf's `compute`) over its access factors, times its literal factors, written straight into
    the output view where it covers it (`run_into`); any other right side is a broadcast expression
    (`Broadcast`), summed over axes not in the output.
    """

    __slots__ = ("e", "factors", "identity", "keep", "leaf", "letters", "names", "out_axes", "planned", "scale", "spec",
                 "sums", "views")

    def __init__(self, e: Expr, views: dict[Access, View], letters: dict[IndexVar, str], sums: Mapping[IndexVar, int],
                 out_axes: str, leaf: Leaf | None, names: Mapping[str, str] | None = None) -> None:
        self.e, self.views, self.letters, self.sums, self.out_axes = e, views, letters, dict(sums), out_axes
        self.names = names  # the variable each letter stands for, in descriptions
        self.planned: tuple[Any, contract.Contraction] | None = None  # the last views' key and contraction
        self.factors: tuple[tuple[int, tuple[Any, ...]], ...] | None = None
        self.leaf: Leaf | None = None
        self.scale: Any = 1
        self.keep = self.spec = ""
        self.identity = False
        if is_product(e) and not isinstance(e, Literal):
            factors: list[View] = []
            for f in product_factors(e):
                if isinstance(f, Literal):
                    self.scale = self.scale * f.value
                else:
                    assert isinstance(f, Access), f
                    factors.append(views[f])
            present = "".join(dict.fromkeys("".join(ax for _, _, ax in factors)))
            self.keep = "".join(c for c in out_axes if c in present)
            if (leaf is not None and leaf.pattern is not None
                    and canonical(tuple(ax for _, _, ax in factors), self.keep) == leaf.pattern):
                self.leaf = leaf  # a scaled leaf block
            self.spec = ",".join(ax for _, _, ax in factors) + "->" + self.keep
            self.factors = tuple((t, idx) for t, idx, _ in factors)
            # one factor already in the output's order (a copy or a scaled copy): einsum would return it as is
            self.identity = self.leaf is None and len(factors) == 1 and factors[0][2] == self.keep

    def operands(self, tiles: list[Any], dtype: Any) -> list[Any]:
        """The product's factors' views, converted to `dtype` (as numpy.einsum(..., out=) converts them)."""
        assert self.factors is not None
        ops = []
        for t, idx in self.factors:
            arr = tiles[t][idx]
            ops.append(arr if arr.dtype == dtype else arr.astype(dtype))
        return ops

    def run_into(self, tiles: list[Any], xp: Any, dtype: Any, out: Any, accumulate: bool,
                 counts: Counts) -> bool:
        """Write (`=`) or add (`+=`) a product's value straight into the output view `out`, its
        contraction (`distal.contract`) planned for these views; False where the block is no product that
        covers the output's axes (a leaf's scaled block, a broadcast output letter, an integer scale)."""
        if self.factors is None or self.leaf is not None or self.keep != self.out_axes:
            return False
        ops = self.operands(tiles, dtype)
        if self.scale != 1:
            if np.dtype(dtype).kind not in "fc":
                return False
            small = min(range(len(ops)), key=lambda n: ops[n].size)
            ops[small] = ops[small] * self.scale  # the scale on the smallest factor, not on the result
        self.contraction(ops).run(ops, xp, out=out, accumulate=accumulate, calls=counts.ran, names=self.names)
        return True

    def contraction(self, ops: list[Any]) -> contract.Contraction:
        """The contraction of the product for views like `ops`: planned at the first call, kept for later calls
        with views of the same shapes and strides (a point's program runs its steps on the same tiles)."""
        key = tuple((x.shape, getattr(x, "strides", None)) for x in ops)
        if self.planned is None or self.planned[0] != key:
            self.planned = (key, contract.contraction(self.spec, ops))
        return self.planned[1]

    def run(self, tiles: list[Any], xp: Any, dtype: Any, counts: Counts | None = None,
            rows: tuple[str, int, int] | None = None) -> tuple[Any, str]:
        """The value and its axes; with `rows` (letter, lo, hi), only for that range of that output letter (a
        chunk of a broadcast expression: `SliceStep.run` streams large outputs chunk by chunk)."""
        if self.factors is not None:
            ops = self.operands(tiles, dtype)
            if self.identity:
                result = ops[0]
            elif self.leaf is not None:
                result = self.leaf.compute(*ops, xp=xp)
            else:
                result = self.contraction(ops).run(ops, xp, calls=counts.ran if counts else None,
                                                   names=self.names)
            if self.scale != 1:
                result = result * self.scale
            return result, self.keep

        def view(acc: Access) -> tuple[Any, str]:
            t, idx, axes = self.views[acc]
            arr = tiles[t][idx]
            if rows is not None and rows[0] in axes:
                letter, lo, hi = rows
                arr = arr[tuple(slice(lo, hi) if c == letter else slice(None) for c in axes)]
            return operand(arr, dtype), axes

        value, axes = Broadcast(xp, view, self.letters, self.sums)(self.e)
        drop = tuple(n for n, c in enumerate(axes) if c not in self.out_axes)
        if drop:
            value = xp.asarray(value).sum(axis=drop)
            axes = "".join(c for c in axes if c in self.out_axes)
        return value, axes


class SliceStep(Step):
    """A slice-mode block with every view's index worked out: the leaf's own implementation writing or
    adding into the output view (`into`: the leaf's operands), else `value` stored into it."""

    __slots__ = ("accumulate", "assign", "dtype", "into", "leaf", "out", "out_axes", "out_idx", "value")

    def __init__(self, out: int, out_idx: tuple[Any, ...], accumulate: bool, dtype: Any, leaf: Leaf | None,
                 into: tuple[tuple[int, tuple[Any, ...]], ...] | None, value: BlockValue | None,
                 out_axes: str, assign: object = None) -> None:
        self.out, self.out_idx, self.accumulate, self.dtype = out, out_idx, accumulate, dtype
        self.leaf, self.into, self.value, self.out_axes = leaf, into, value, out_axes
        self.assign = assign  # the assignment the block runs (for descriptions)

    def describe(self, tiles: list[Any], xp_name: str = "numpy") -> str | None:
        """The calls the step runs on `tiles` (arrays or stand-ins of their shapes and strides), worded as
        `run` counts them in `Counts.ran`; None for a leaf with an implementation of its own (explain words
        those by the leaf)."""
        if self.into is not None:
            leaf = self.leaf
            assert leaf is not None
            if leaf.pattern is None or not leaf.contracts:
                return None
            views = [tiles[t][idx] for t, idx in self.into]
            return contract.contraction(leaf.pattern, views).describe(self.dtype, xp_name)
        value = self.value
        assert value is not None
        if value.factors is None:
            out = tiles[self.out][self.out_idx]
            return self._broadcast_words(out.shape, self.chunk_rows(out, np if xp_name == "numpy" else None))
        views = [tiles[t][idx] for t, idx in value.factors]
        text = contract.contraction(value.spec, views).describe(self.dtype, xp_name, names=value.names)
        if value.leaf is not None or value.keep != self.out_axes or (
                value.scale != 1 and np.dtype(self.dtype).kind not in "fc"):
            text += f", then {'scaled and ' if value.scale != 1 else ''}stored (broadcast) into the output view"
        return text

    def run(self, tiles: list[Any], xp: Any, counts: Counts) -> None:
        out = tiles[self.out][self.out_idx]
        dtype = self.dtype  # as numpy.einsum(..., out=): operands converted first
        if self.into is not None:
            leaf = self.leaf
            assert leaf is not None
            ops = []
            for t, idx in self.into:
                arr = tiles[t][idx]
                ops.append(arr if arr.dtype == dtype else arr.astype(dtype))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                leaf.compute_into(out, *ops, accumulate=self.accumulate, xp=xp, calls=counts.ran)
            counts.leaves[leaf.name] = counts.leaves.get(leaf.name, 0) + 1
            return
        assert self.value is not None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.value.run_into(tiles, xp, dtype, out, self.accumulate, counts):
                return
            rows = self.chunk_rows(out, xp)
            if rows:  # an element-wise expression over a large output: chunk by chunk, in cache
                n = out.shape[0]
                for lo in range(0, n, rows):
                    hi = min(n, lo + rows)
                    part, axes = self.value.run(tiles, xp, dtype, counts, (self.out_axes[0], lo, hi))
                    if axes != self.out_axes:
                        part = to_axes(xp, part, axes, self.out_axes)
                    store(out[lo:hi], part, self.accumulate, xp)
                _count(counts.ran, self._broadcast_words(out.shape, rows))
                return
            value, axes = self.value.run(tiles, xp, dtype, counts)
            if self.value.factors is None:
                _count(counts.ran, self._broadcast_words(out.shape, 0))
        if axes != self.out_axes:
            value = to_axes(xp, value, axes, self.out_axes)
        store(out, value, self.accumulate, xp)  # cast into the output (the casting rule was checked)

    def chunk_rows(self, out: Any, xp: Any) -> int:
        """Rows of the output per chunk when a broadcast expression streams it chunk by chunk (NumPy tiles,
        outputs of at least two chunks of `CHUNK` elements: each chunk's temporaries stay in cache), else 0."""
        value = self.value
        if value is None or value.factors is not None or xp is not np or not self.out_axes:
            return 0
        size = math.prod(out.shape) * max(1, math.prod(value.sums.values()))  # points the expression computes
        if size < 2 * CHUNK or out.shape[0] < 2:
            return 0
        return max(1, CHUNK * int(out.shape[0]) // int(size))

    def _broadcast_words(self, shape: tuple[int, ...], rows: int) -> str:
        what = f"a broadcast NumPy expression into [{'x'.join(map(str, shape))}]"
        return what + (f" in chunks of {rows} row(s)" if rows else "")

    def reads(self) -> frozenset[int]:
        """The slots whose arrays the block's right side reads."""
        if self.into is not None:
            return frozenset(t for t, _ in self.into)
        assert self.value is not None
        return frozenset(t for t, _, _ in self.value.views.values())

    def uses(self, slot: int) -> bool:
        return slot == self.out or slot in self.reads()

    def writing(self, tiles: list[Any]) -> SliceStep | None:
        """The block writing its output view (`=`) instead of adding into it, when that view is the whole
        output array and the right side does not read it: the same as adding into zeros."""
        if self.out in self.reads():
            return None
        whole = tiles[self.out]
        if math.prod(whole[self.out_idx].shape) != math.prod(whole.shape):  # a basic index: a part of the tile
            return None
        if not self.accumulate:
            return self
        return SliceStep(self.out, self.out_idx, False, self.dtype, self.leaf, self.into, self.value, self.out_axes,
                         self.assign)


@functools.lru_cache(maxsize=1024)
def canonical(inputs: tuple[str, ...], output: str) -> str:
    """The einsum pattern `inputs->output` with its axes renamed a, b, ... by first appearance, output first."""
    names: dict[str, str] = {}
    for c in output + "".join(inputs):
        names.setdefault(c, LETTERS[len(names)])
    return ",".join("".join(names[c] for c in ax) for ax in inputs) + "->" + "".join(names[c] for c in output)


def is_product(e: Expr) -> bool:
    return all(isinstance(f, Access | Literal) for f in product_factors(e))


class Broadcast(ExprVisitor[tuple[Any, str]]):
    """An expression over a slice block as a broadcast array expression: (value, its axes' letters)."""

    def __init__(self, xp: Any, view: Any, letters: dict[IndexVar, str], sums: dict[IndexVar, int]) -> None:
        self.xp, self.view, self.letters, self.sums = xp, view, letters, sums

    def visit_access(self, e: Access) -> tuple[Any, str]:
        arr, axes = self.view(e)
        return _diagonal(self.xp, arr, axes)

    def visit_literal(self, e: Literal) -> tuple[Any, str]:
        return e.value, ""

    def visit_neg(self, e: Neg) -> tuple[Any, str]:
        x, ax = self(e.operand)
        return -x, ax

    def visit_sum(self, e: Sum) -> tuple[Any, str]:
        x, ax = self(e.body)
        c = self.letters[e.var]
        if c in ax:
            return self.xp.asarray(x).sum(axis=ax.index(c)), ax.replace(c, "")
        return x * self.sums[e.var], ax

    def _operands(self, e: BinaryOp) -> tuple[Any, Any, str]:
        x, xa = self(e.a)
        y, ya = self(e.b)
        axes = xa + "".join(c for c in ya if c not in xa)
        return _expand(self.xp, x, xa, axes), _expand(self.xp, y, ya, axes), axes

    def visit_add(self, e: Add) -> tuple[Any, str]:
        x, y, axes = self._operands(e)
        return x + y, axes

    def visit_sub(self, e: Sub) -> tuple[Any, str]:
        x, y, axes = self._operands(e)
        return x - y, axes

    def visit_mul(self, e: Mul) -> tuple[Any, str]:
        x, y, axes = self._operands(e)
        return x * y, axes

    def visit_div(self, e: Div) -> tuple[Any, str]:
        x, y, axes = self._operands(e)
        return x / y, axes

    def visit_call(self, e: Expr) -> tuple[Any, str]:
        from distal.cin.blocks import apply  # a unary function (distal.notation.ast.Call): sqrt, abs, ...
        from distal.notation.ast import Call

        assert isinstance(e, Call), e
        x, ax = self(e.operand)
        return apply(self.xp, e, x), ax


def _diagonal(xp: Any, arr: Any, axes: str) -> tuple[Any, str]:
    unique = "".join(dict.fromkeys(axes))
    if unique == axes:
        return arr, axes
    return xp.einsum(f"{axes}->{unique}", arr), unique


def _expand(xp: Any, x: Any, axes: str, target: str) -> Any:
    """`x` (axes `axes`) transposed and reshaped to broadcast against `target`."""
    if not axes:
        return x
    order = sorted(range(len(axes)), key=lambda n: target.index(axes[n]))
    x = xp.transpose(x, order)
    shape = [1] * len(target)
    for n in order:
        shape[target.index(axes[n])] = x.shape[order.index(n)]
    return x.reshape(shape)


def to_axes(xp: Any, value: Any, axes: str, out_axes: str) -> Any:
    """`value` (axes `axes`, a subset of `out_axes`) broadcastable to `out_axes`."""
    if not axes:
        return value
    return _expand(xp, xp.asarray(value), axes, out_axes)


class IndexStep(Step):
    """An index-mode block, its points' index values kept (`Provenance.block_points` ran once)."""

    __slots__ = ("a", "ext", "npts", "origin", "slots", "vals")

    def __init__(self, a: Assign, vals: dict[IndexVar, Any], npts: int, origin: list[tuple[int, ...]],
                 slots: Mapping[TensorVar, int], ext: Mapping[IndexVar, int]) -> None:
        self.a, self.vals, self.npts, self.origin, self.slots, self.ext = a, vals, npts, origin, slots, ext

    def run(self, tiles: list[Any], xp: Any, counts: Counts) -> None:
        origin, slots = self.origin, self.slots
        run_index_block(self.a, self.vals, self.npts, lambda t: (tiles[slots[t]], origin[slots[t]]), self.ext, xp)

    def uses(self, slot: int) -> bool:
        return any(self.slots[acc.tensor] == slot for acc in (self.a.lhs, *self.a.rhs.accesses()))


def stand_in(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array of `shape` in C order that holds no data: its views have the strides a tile's would have.
    Never read (planning only looks at shapes and strides)."""
    item = np.dtype(dtype).itemsize
    strides, step = [], item
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=dtype), shape, tuple(reversed(strides)),
                                           writeable=False)


def calls_of(planned: list[Step | str], tiles: list[Any], a: Assign) -> list[str]:
    """The calls the planned steps of assignment `a` run, in words, in order, each once (with its count)."""
    found: dict[str, int] = {}
    for step in planned:
        if isinstance(step, str):
            text = step if str(a) in step else ""
        elif isinstance(step, SliceStep) and step.assign is a:
            text = step.describe(tiles) or ""
        elif isinstance(step, IndexStep) and step.a is a:
            text = "index mode: NumPy gathers and scatters over the block's points"
        else:
            text = ""
        if text:
            found[text] = found.get(text, 0) + 1
    return [t if n == 1 else f"{t} ({n} blocks)" for t, n in found.items()]
