"""A `dt.Tensor` acts as an array: NumPy's protocols (NEP 13 and 18), operators, indexing, conversions.

`ArrayBehaviour` is mixed into `dt.Tensor` (docs/arrays.md says what a user
sees). What distal computes stays distal's: `np.einsum` and `np.matmul` (the
`@` operator) on tensors run `dt.einsum`, whose result is a `dt.Tensor`
(on Legate where auto runs it there). Everything else runs in NumPy on each
tensor's data read where it already is in host memory (`host_data`: an eager
result's array, the host copy a placed store keeps; a copy read back from
Legate otherwise), and gives NumPy arrays of the caller's own (an array that
may share that memory, a view such as `t.reshape(...)` or `t[0]`, is copied:
`_on_data`); `np.asarray(tensor)` is a copy; an `out=` tensor receives the
result (`set_array`: its data is then on the host). Identity stays as
notation needs it: `==`, `!=` and `hash` compare tensors as objects (tensors
are dict keys; `np.equal` compares elements), `bool(t)` is True, and
indexing by index variables writes notation
(`A[i, j] = ...`), while integers, slices, arrays and `...` read the data.

>>> import numpy as np
>>> import distal as dt
>>> t = dt.Tensor.from_array("t", np.arange(6.0).reshape(2, 3))
>>> t + 1
array([[1., 2., 3.],
       [4., 5., 6.]])
>>> float(t[1, 2]), len(t), t.ndim, t.size
(5.0, 2, 2, 6)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from distal.errors import NotationError
from distal.notation.ast import Expr, IndexVar

__all__ = ["ArrayBehaviour", "is_notation_key", "use_einsum"]

# NumPy functions answered from the tensor's shape and dtype, without reading its data
_METADATA: dict[Any, Callable[[Any], Any]] = {
    np.shape: lambda t: t.concrete_shape(),
    np.ndim: lambda t: len(t.shape),
    np.size: lambda t: int(np.prod(t.concrete_shape(), dtype=np.int64)),
}


def is_notation_key(key: object) -> bool:
    """Whether indexing by `key` writes notation (index variables, or none: `A[()]`), not reads data."""
    if key is None or isinstance(key, IndexVar):
        return True
    return isinstance(key, tuple) and (not key or any(isinstance(k, IndexVar) for k in key))


_EINSUM: list[Callable[..., Any]] = []  # `dt.einsum`, given by `distal.api` (`use_einsum`)


def use_einsum(einsum: Callable[..., Any]) -> None:
    """Make `einsum` what `np.einsum` and `@` on tensors run (`distal.api` gives `dt.einsum` at import)."""
    _EINSUM[:] = [einsum]


def _einsum(*args: Any, **kwargs: Any) -> Any:
    return _EINSUM[0](*args, **kwargs)


def _arrays(value: Any) -> Any:
    """`value` with every tensor in it (also in lists, tuples and dicts) replaced by a NumPy copy of its data."""
    if isinstance(value, ArrayBehaviour):
        return value.to_numpy()
    if isinstance(value, list | tuple):
        return type(value)(_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: _arrays(v) for k, v in value.items()}
    return value


def _reads(value: Any, views: list[np.ndarray]) -> Any:
    """`value` with every tensor in it (also in lists, tuples and dicts) replaced by its data read where it is
    (`host_data`, a read-only view where it is in host memory), each kept in `views` (`_own`)."""
    if isinstance(value, ArrayBehaviour):
        data = value.host_data()
        views.append(data)
        return data
    if isinstance(value, list | tuple):
        return type(value)(_reads(v, views) for v in value)
    if isinstance(value, dict):
        return {k: _reads(v, views) for k, v in value.items()}
    return value


def _own(result: Any, views: list[np.ndarray]) -> Any:
    """`result` of a call on tensors' data read in place (`_reads`), with every array in it that may share
    memory with that data copied: what the user gets is theirs, as from a copy (NumPy's reshape, ravel or
    split of a copy are views of that copy)."""
    if isinstance(result, np.ndarray):
        return result.copy() if any(np.may_share_memory(result, v) for v in views) else result
    if isinstance(result, list | tuple) and not hasattr(result, "_fields"):
        return type(result)(_own(r, views) for r in result)
    return result


def _on_data(func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    """`func(*args, **kwargs)` with the tensors among them read where their data is (`_reads`), its result the
    user's own (`_own`)."""
    views: list[np.ndarray] = []
    return _own(func(*_reads(args, views), **_reads(kwargs, views)), views)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _dot_subscripts(a: Any, b: Any) -> str | None:
    """`np.dot(a, b)` as an einsum: the last axis of `a` with the second to last of `b` (its only one for a
    vector); None for a scalar operand (NumPy multiplies)."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0 or na + nb > len(_LETTERS):
        return None
    left = _LETTERS[: na - 1]
    right = _LETTERS[na - 1: na + nb - 2]
    inner = _LETTERS[na + nb - 2]
    rb = right + inner if nb == 1 else right[:-1] + inner + right[-1]
    return f"{left}{inner},{rb}->{left}{right}"


def _tensordot_subscripts(a: Any, b: Any, axes: Any = 2) -> str | None:
    """`np.tensordot(a, b, axes)` as an einsum (`axes` an integer or two sequences of axes); None where NumPy
    should say what is wrong (axes out of range, mismatched counts)."""
    na, nb = np.ndim(a), np.ndim(b)
    if na + nb > len(_LETTERS):
        return None
    try:
        if isinstance(axes, int | np.integer):
            n = int(axes)
            pairs = list(zip(range(na - n, na), range(n))) if 0 <= n <= min(na, nb) else None
        else:
            xa, xb = axes
            xa = [int(xa)] if isinstance(xa, int | np.integer) else [int(x) for x in xa]
            xb = [int(xb)] if isinstance(xb, int | np.integer) else [int(x) for x in xb]
            pairs = list(zip((x % na for x in xa), (x % nb for x in xb))) if len(xa) == len(xb) else None
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if pairs is None or len({p for p, _ in pairs}) != len(pairs) or len({q for _, q in pairs}) != len(pairs):
        return None
    ta = list(_LETTERS[:na])
    tb = list(_LETTERS[na: na + nb])
    for p, q in pairs:
        tb[q] = ta[p]
    summed = {ta[p] for p, _ in pairs}
    out = [c for c in ta if c not in summed] + [c for c in tb if c not in summed]
    return f"{''.join(ta)},{''.join(tb)}->{''.join(out)}"


def _transpose_subscripts(a: Any, axes: Any = None) -> str | None:
    n = np.ndim(a)
    letters = _LETTERS[:n]
    if axes is None:
        return f"{letters}->{letters[::-1]}"
    try:
        order = [int(x) % n for x in axes] if n else []
    except (TypeError, ValueError):
        return None
    if sorted(order) != list(range(n)):
        return None
    return f"{letters}->{''.join(letters[x] for x in order)}"


def _distal_function(func: Any, args: Any, kwargs: Any) -> str | None:
    """The einsum subscripts distal runs `func(*args, **kwargs)` as, or None (NumPy runs it on copies)."""
    if func is np.dot and len(args) == 2 and not kwargs:
        return _dot_subscripts(*args)
    if func is np.tensordot and 2 <= len(args) <= 3 and set(kwargs) <= {"axes"}:
        return _tensordot_subscripts(*args, **kwargs)
    if func is np.inner and len(args) == 2 and not kwargs and np.ndim(args[0]) and np.ndim(args[1]):
        return _tensordot_subscripts(args[0], args[1], ([-1], [-1]))
    if func is np.outer and len(args) == 2 and not kwargs and np.ndim(args[0]) == np.ndim(args[1]) == 1:
        return "i,j->ij"
    if func is np.trace and len(args) == 1 and not kwargs and np.ndim(args[0]) == 2:
        return "ii->"
    if func is np.transpose and 1 <= len(args) <= 2 and set(kwargs) <= {"axes"}:
        return _transpose_subscripts(*args, **kwargs)
    return None


def _matmul_subscripts(a: Any, b: Any) -> str | None:
    """The einsum of `a @ b` for matrices and vectors (NumPy's matmul rules), None for stacks (run by NumPy)."""
    ndims = (np.ndim(a), np.ndim(b))
    return {(2, 2): "ij,jk->ik", (2, 1): "ij,j->i", (1, 2): "j,jk->k", (1, 1): "j,j->"}.get(ndims)


class ArrayBehaviour(NDArrayOperatorsMixin):
    """NumPy's array protocols and operators for `dt.Tensor` (see the module docstring)."""

    __slots__ = ()

    # what the mixin relies on; `TensorBase` provides them
    if TYPE_CHECKING:
        @property
        def shape(self) -> tuple[Any, ...]: ...
        @property
        def dtype(self) -> np.dtype[Any]: ...
        @property
        def name(self) -> str: ...
        def concrete_shape(self) -> tuple[int, ...]: ...
        def to_numpy(self) -> np.ndarray: ...
        def host_data(self) -> np.ndarray: ...
        def set_array(self, array: Any) -> None: ...

    # -- identity: notation's, not elementwise ------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return True

    # -- shape ---------------------------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        """The number of dimensions (NumPy's `ndim`)."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements (NumPy's `size`; the extents must be integers)."""
        return int(np.prod(self.concrete_shape(), dtype=np.int64))

    @property
    def T(self) -> Any:
        """The transpose (`dt.einsum` reversing the axes): a new `dt.Tensor`, not a view."""
        return _einsum(_transpose_subscripts(self), self)

    def __len__(self) -> int:
        shape = self.concrete_shape()
        if not shape:
            raise TypeError(f"len() of unsized object: {self.name} is a scalar (0-d) tensor")
        return shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError(f"iteration over a 0-d array: {self.name} is a scalar tensor")
        return iter(self.to_numpy())

    # -- conversions ---------------------------------------------------------------------------------------

    def __float__(self) -> float:
        return float(self.host_data())

    def __int__(self) -> int:
        return int(self.host_data())

    def __complex__(self) -> complex:
        return complex(self.host_data())

    def _read(self, key: object) -> Any:
        """Indexing by integers, slices, arrays, `...` or `np.newaxis`: the data read, as NumPy indexes it (an
        array part a new array of its own, never a view of the tensor's data)."""
        return _on_data(lambda data, k: data[k], (self, key), {})

    def _write(self, key: object, value: object) -> None:
        """Assigning by integers, slices, arrays or `...`: NumPy's assignment into a copy of the data, which
        becomes the tensor's data (`set_array`: on the host)."""
        data = self.to_numpy()
        data[_arrays(key)] = _arrays(value)
        self.set_array(data)

    # -- NEP 13 and NEP 18 ---------------------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NEP 13: a ufunc with a tensor among its inputs or `out`.

        `np.matmul` (and `@`) of matrices and vectors runs `dt.einsum`; every other ufunc runs in NumPy on copies
        of the tensors' data. Tensors in `out` receive the result and are returned in its place.
        """
        tensor = ArrayBehaviour
        expr = next((x for x in inputs if isinstance(x, Expr)), None)
        if expr is not None:  # a tensor inside notation (`t * B[i, j]`): it needs its indices there
            names = [x.name for x in inputs if isinstance(x, tensor)]
            raise NotationError(
                f"expected accesses such as {names[0]}[i, j] next to {expr} in index notation, but found the tensor "
                f"{names[0]} itself (give it its index variables)"
            )
        outs = kwargs.get("out", ())
        if ufunc is np.matmul and method == "__call__" and not outs and len(kwargs) == 0:
            subscripts = _matmul_subscripts(*inputs)
            if subscripts is not None:
                return _einsum(subscripts, *inputs)
        if method == "at" and isinstance(inputs[0], tensor):  # in place, on the first operand
            data = inputs[0].to_numpy()
            ufunc.at(data, *_arrays(inputs[1:]), **_arrays(kwargs))
            inputs[0].set_array(data)
            return None
        if not any(isinstance(o, tensor) for o in outs):  # a new result: the inputs are read where they are
            return _on_data(getattr(ufunc, method), inputs, kwargs)
        arrays = tuple(o.to_numpy() if isinstance(o, tensor) else o for o in outs)
        kwargs = {**_arrays({k: v for k, v in kwargs.items() if k != "out"}), "out": arrays}
        result = getattr(ufunc, method)(*_arrays(inputs), **kwargs)
        for o, a in zip(outs, arrays):
            if isinstance(o, tensor):
                o.set_array(a)
        if len(outs) == 1:
            return outs[0]
        return tuple(o if isinstance(o, tensor) else r for o, r in zip(outs, result))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NEP 18: a NumPy function with a tensor among its arguments.

        `np.einsum`, and `np.dot`, `np.tensordot`, `np.inner`, `np.outer`, `np.trace` (of a matrix) and
        `np.transpose` written as einsums, run `dt.einsum` (their result a `dt.Tensor`); `np.shape`, `np.ndim`
        and `np.size` read the tensor's shape; every other function runs on copies of the tensors' data.
        """
        if func is np.einsum:
            return _einsum(*args, **kwargs)
        subscripts = _distal_function(func, args, kwargs)
        if subscripts is not None:
            operands = args[:2] if func in (np.dot, np.tensordot, np.inner, np.outer) else args[:1]
            return _einsum(subscripts, *operands)
        if func in _METADATA and len(args) == 1 and not kwargs and args[0] is self:
            return _METADATA[func](self)
        return _on_data(func, args, kwargs)


# ndarray's methods that read data, on a tensor: the same method of its data (`t.sum()`, `t.astype(np.float32)`,
# `t.item()`), read where it is (`_on_data`); a NumPy array or scalar of the caller's own results. Methods that
# would change the data in place (`fill`, `sort`, `resize`, ...) and `copy`/`view` (which would not give a
# tensor) are not among them.
NDARRAY_METHODS = (
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "cumprod", "cumsum", "diagonal", "flatten",
    "item", "max", "mean", "min", "nonzero", "prod", "ravel", "reshape", "round", "squeeze", "std", "sum",
    "swapaxes", "tobytes", "tolist",
)  # not `var`: a tensor's `var` is its variable in the IR (`np.var(t)` gives the variance)


def _ndarray_method(name: str) -> Callable[..., Any]:
    def method(self: ArrayBehaviour, *args: Any, **kwargs: Any) -> Any:
        return _on_data(lambda data, *a, **k: getattr(data, name)(*a, **k), (self, *args), kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"NumPy's `ndarray.{name}` of the tensor's data (its result the caller's own)."
    return method


for _name in NDARRAY_METHODS:
    setattr(ArrayBehaviour, _name, _ndarray_method(_name))
