"""Making stores: from a NumPy array, or filled with a value by a task.

Both ways write the whole store before anyone can launch on it (guards for
LEGATE_NOTES.md behaviours 2 and 3): an array is attached whole, and a fill
is a full-domain launch of a kernel, never `LogicalStore.fill`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._launch import Arg, Privilege, index_launch, tile_colors
from ._registry import register_kernel
from ._start import legate_runtime
from ._store import Store, legate_type, wrap

__all__ = ["from_numpy", "full", "zeros"]

_lock = threading.Lock()
_fills: dict[tuple[str, Any], int] = {}


def from_numpy(array: Any) -> Store:
    """A store holding a copy of `array` (any array-like).

    The copy is private to the store, so later changes to `array` do not
    reach it.
    """
    private = np.array(array, order="C", copy=True)
    handle = legate_runtime().create_store_from_buffer(
        legate_type(private.dtype), private.shape, private, False
    )
    return wrap(handle, private.dtype, buffer=private)


def _fill_kernel(value: Any, dtype: np.dtype[Any]) -> int:
    cache_key = (dtype.str, value)
    with _lock:
        key = _fills.get(cache_key)
        if key is None:
            def fill(point: tuple[int, ...], out: np.ndarray) -> None:
                out[...] = value

            key = register_kernel(fill, f"fill({value!r})")
            _fills[cache_key] = key
        return key


def full(shape: Sequence[int], value: Any, dtype: Any = np.float64,
         tile: Sequence[int] | None = None) -> Store:
    """A new store of `shape` with every element `value`.

    The fill runs as a task over the whole store: one task, or with `tile`
    one task per `tile`-sized block (give the tiling later launches use, so
    each block's instance is made where it will be used).
    """
    kind = np.dtype(dtype)
    extents = tuple(int(n) for n in shape)
    handle = legate_runtime().create_store(legate_type(kind), extents)
    store = wrap(handle, kind)
    key = _fill_kernel(np.asarray(value, dtype=kind).item(), kind)
    if tile is None:
        index_launch(key, (1,), [Arg(store, Privilege.WRITE)])
    else:
        blocks = tuple(int(t) for t in tile)
        index_launch(key, tile_colors(extents, blocks), [Arg(store, Privilege.WRITE, blocks)])
    return store


def zeros(shape: Sequence[int], dtype: Any = np.float64,
          tile: Sequence[int] | None = None) -> Store:
    """A new store of `shape` filled with zeros (see `full`)."""
    return full(shape, 0, dtype, tile)
