"""A `dt.Tensor` acts as an array: NumPy's protocols (NEP 13 and 18), operators, indexing, conversions.

`ArrayBehaviour` is mixed into `dt.Tensor` (docs/arrays.md says what a user
sees). What distal computes stays distal's: `np.einsum` and `np.matmul` (the
`@` operator) on tensors run `dt.einsum`, whose result is a `dt.Tensor`
(on Legate where auto runs it there). Everything else runs in NumPy on a
copy of each tensor's data (`np.asarray(tensor)`) and gives NumPy arrays;
an `out=` tensor receives the result (`set_array`: its data is then on the
host). Identity stays as notation needs it: `==`, `!=` and `hash` compare
tensors as objects (tensors are dict keys; `np.equal` compares elements),
`bool(t)` is True, and indexing by index variables writes notation
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

from distal.notation.ast import IndexVar

__all__ = ["ArrayBehaviour", "is_notation_key", "use_einsum"]

# NumPy functions answered from the tensor's shape and dtype, without reading its data
_METADATA: dict[Any, Callable[[Any], Any]] = {
    np.shape: lambda t: t.concrete_shape(),
    np.ndim: lambda t: len(t.shape),
    np.size: lambda t: int(np.prod(t.concrete_shape(), dtype=np.int64)),
}


def is_notation_key(key: object) -> bool:
    """Whether indexing by `key` writes notation (index variables, or none: `A[()]`), not reads data."""
    if key is None or key == ():
        return True
    if isinstance(key, IndexVar):
        return True
    return isinstance(key, tuple) and any(isinstance(k, IndexVar) for k in key)


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
        return float(self.to_numpy())

    def __int__(self) -> int:
        return int(self.to_numpy())

    def __complex__(self) -> complex:
        return complex(self.to_numpy())

    def _read(self, key: object) -> Any:
        """Indexing by integers, slices, arrays, `...` or `np.newaxis`: the data read, as NumPy indexes it."""
        return self.to_numpy()[_arrays(key)]

    # -- NEP 13 and NEP 18 ---------------------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NEP 13: a ufunc with a tensor among its inputs or `out`.

        `np.matmul` (and `@`) of matrices and vectors runs `dt.einsum`; every other ufunc runs in NumPy on copies
        of the tensors' data. Tensors in `out` receive the result and are returned in its place.
        """
        tensor = ArrayBehaviour
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
        if not any(isinstance(o, tensor) for o in outs):
            return getattr(ufunc, method)(*_arrays(inputs), **_arrays(kwargs))
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

        `np.einsum` runs `dt.einsum` (its result a `dt.Tensor`); `np.shape`, `np.ndim` and `np.size` read the
        tensor's shape; every other function runs on copies of the tensors' data.
        """
        if func is np.einsum:
            return _einsum(*args, **kwargs)
        if func in _METADATA and len(args) == 1 and not kwargs and args[0] is self:
            return _METADATA[func](self)
        return func(*_arrays(args), **_arrays(kwargs))
