"""A stand-in for GPU arrays, so the GPU path of task kernels is tested on CPUs.

On a GPU processor a task's tiles are CuPy arrays, and CuPy refuses to turn
device memory into a NumPy array implicitly. `DeviceArray` behaves the same
way: it wraps a NumPy array (a view, so writes reach the tensor), supports
the operations a kernel may apply to a tile, and raises on `__array__`, so
a kernel that reaches for NumPy (`np.asarray(tile)`, `np.einsum(tile, ...)`)
fails here as it would on a GPU. Its namespace, `namespace()`, holds the
functions kernels may call (the subset of CuPy's API distal uses), found
through the Array API's `__array_namespace__`, as `distal.lower.task_body`
looks for it. Index arrays must be device arrays too: indexing with a host
NumPy array raises.

>>> import numpy as np
>>> a = DeviceArray(np.arange(4.0))
>>> np.asarray(a)
Traceback (most recent call last):
...
TypeError: a device array cannot become a NumPy array implicitly (use .get())
>>> xp = a.__array_namespace__()
>>> xp.matmul(DeviceArray(np.eye(2)), DeviceArray(np.ones((2, 2)))).get().tolist()
[[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DeviceArray", "namespace", "to_device"]

_CALLS: dict[str, int] = {}


def _host(x: Any) -> Any:
    """The NumPy array behind a device array; scalars, slices and tuples of them pass through."""
    if isinstance(x, DeviceArray):
        return x._data
    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    if isinstance(x, np.ndarray) and x.ndim > 0:
        raise TypeError("a host NumPy array cannot be used with device arrays (move it with asarray)")
    return x


def _wrap(x: Any) -> Any:
    return DeviceArray(x) if isinstance(x, np.ndarray) else x


class DeviceArray:
    """A NumPy array that pretends to live on a device (see the module docstring)."""

    __slots__ = ("_data",)
    __array_priority__ = 100.0

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    # conversions a GPU array refuses
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("a device array cannot become a NumPy array implicitly (use .get())")

    def __float__(self) -> float:
        raise TypeError("a device array cannot become a Python number implicitly (use .get())")

    def __array_namespace__(self, api_version: str | None = None) -> types.SimpleNamespace:
        return namespace()

    def get(self) -> np.ndarray:
        """A host copy (CuPy's name for it)."""
        return self._data.copy()

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._data.dtype

    @property
    def size(self) -> int:
        return self._data.size

    def reshape(self, *shape: Any) -> DeviceArray:
        return DeviceArray(self._data.reshape(*shape))

    def sum(self, axis: Any = None) -> DeviceArray:
        return DeviceArray(np.asarray(self._data.sum(axis=axis)))

    def astype(self, dtype: Any) -> DeviceArray:
        return DeviceArray(self._data.astype(dtype))

    def copy(self) -> DeviceArray:
        return DeviceArray(self._data.copy())

    def __getitem__(self, index: Any) -> DeviceArray:
        return DeviceArray(np.asarray(self._data[_host(index)]))

    def __setitem__(self, index: Any, value: Any) -> None:
        self._data[_host(index)] = _host(value)

    def __iadd__(self, other: Any) -> DeviceArray:
        self._data += _host(other)
        return self

    def __neg__(self) -> DeviceArray:
        return DeviceArray(-self._data)

    def _op(self, other: Any, fn: Callable[[Any, Any], Any]) -> DeviceArray:
        return DeviceArray(np.asarray(fn(self._data, _host(other))))

    def __add__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: a + b)

    def __radd__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: b + a)

    def __sub__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: a * b)

    def __rmul__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: b * a)

    def __truediv__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: a / b)

    def __rtruediv__(self, other: Any) -> DeviceArray:
        return self._op(other, lambda a, b: b / a)

    def __repr__(self) -> str:
        return f"DeviceArray({self._data!r})"


def to_device(x: np.ndarray) -> DeviceArray:
    """View `x` as a device array (writes reach `x`)."""
    return DeviceArray(x)


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        _CALLS[name] = _CALLS.get(name, 0) + 1
        return _wrap(fn(*(_host(a) for a in args), **{k: _host(v) for k, v in kwargs.items()}))

    call.__name__ = name
    return call


def _asarray(x: Any, dtype: Any = None) -> DeviceArray:
    if isinstance(x, DeviceArray):
        return x if dtype is None else x.astype(dtype)
    return DeviceArray(np.array(x, dtype=dtype))  # host data moves to the device (a copy)


def _add_at(out: DeviceArray, index: Any, value: Any) -> None:
    _CALLS["add.at"] = _CALLS.get("add.at", 0) + 1
    np.add.at(out._data, _host(index), _host(value))


_NAMESPACE = types.SimpleNamespace(
    asarray=_asarray,
    zeros=_counted("zeros", np.zeros),
    arange=_counted("arange", np.arange),
    matmul=_counted("matmul", np.matmul),
    dot=_counted("dot", np.dot),  # cupy.dot
    einsum=_counted("einsum", np.einsum),
    transpose=_counted("transpose", np.transpose),
    broadcast_to=_counted("broadcast_to", np.broadcast_to),
    **{name: _counted(name, getattr(np, name)) for name in ("absolute", "conjugate", "exp", "sqrt", "real")},
    add=types.SimpleNamespace(at=_add_at),
    calls=_CALLS,
)


def namespace() -> types.SimpleNamespace:
    """The stand-in device's array namespace; `namespace().calls` counts the calls by name."""
    return _NAMESPACE
