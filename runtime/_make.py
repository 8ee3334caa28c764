"""Making stores: from a NumPy array, or filled with a value by a task.

Both ways write the whole store before anyone can launch on it (guards for
LEGATE_NOTES.md behaviours 2 and 3): an array is copied in whole, and a fill
is a full-domain launch of a kernel, never `LogicalStore.fill`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from distal.errors import NotSupportedYet

from ._launch import Arg, Privilege, index_launch, tile_colors
from ._registry import register_kernel
from ._start import legate_runtime
from ._store import Store, ensure_room, legate_type, wrap

__all__ = ["fill", "from_numpy", "full", "unwritten", "zeros"]

_lock = threading.Lock()
_fills: dict[tuple[str, Any], int] = {}


MAX_DIMS = 6  # legate.core.LEGATE_MAX_DIM of these wheels


def _check_ndim(shape: Sequence[int]) -> None:
    if len(shape) > MAX_DIMS:
        raise NotSupportedYet(
            f"expected at most {MAX_DIMS} dimensions for a Legate store (this Legate build's limit), "
            f"but found a tensor of order {len(shape)} with shape {tuple(shape)}"
        )


_ROOM_CHECKED_FROM = 1 << 20  # smaller copies cannot matter next to the 16 MiB overhead every check adds


def from_numpy(array: Any) -> Store:
    """A store holding a copy of `array` (any array-like); waits for the copy.

    The data is copied into a store Legate owns: launches on a store that
    stays attached to a NumPy buffer each wait for completion, as after an
    inline mapping (LEGATE_NOTES.md behaviour 4; bench/launch_overhead.py
    measures both), so the attachment lives only for the copy.
    """
    private = np.array(array, order="C", copy=True)
    _check_ndim(private.shape)
    if private.nbytes > _ROOM_CHECKED_FROM:
        # the attached host data and the store it is copied into both live in Legate's memory
        ensure_room(f"copying a {private.dtype} array of shape {list(private.shape)} onto Legate (its attached "
                    "host data and its store)", 2 * private.nbytes)
    runtime = legate_runtime()
    kind = legate_type(private.dtype)
    handle = runtime.create_store(kind, private.shape)
    if private.size > 0:
        source = runtime.create_store_from_buffer(kind, private.shape, private, True)
        runtime.issue_copy(handle, source)
        source.detach()  # waits for the copy; `private` may then be freed
    return wrap(handle, private.dtype)


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
    _check_ndim(extents)
    if not extents:  # tasks cannot view 0-d stores; a copy-in can write one
        return from_numpy(np.full((), value, dtype=kind))
    store = unwritten(extents, kind)
    fill(store, value, tile)
    return store


def unwritten(shape: Sequence[int], dtype: Any = np.float64) -> Store:
    """A new store of `shape` (at least 1-D) that nothing has written.

    Only for a caller whose next launch on it writes every element with
    `Privilege.WRITE` over the whole domain, or who `fill`s it first:
    a partial write then a read aborts the process (LEGATE_NOTES.md
    behaviour 2), and reading it at all reads garbage.
    """
    kind = np.dtype(dtype)
    extents = tuple(int(n) for n in shape)
    _check_ndim(extents)
    if not extents:
        raise NotSupportedYet("Legate tasks cannot view 0-d stores; make the store of shape (1,)")
    return wrap(legate_runtime().create_store(legate_type(kind), extents), kind)


def fill(store: Store, value: Any, tile: Sequence[int] | None = None) -> None:
    """Write `value` into every element of `store` by a full-domain launch (see `full`)."""
    kind = np.dtype(store.dtype)
    key = _fill_kernel(np.asarray(value, dtype=kind).item(), kind)
    if tile is None:
        index_launch(key, (1,), [Arg(store, Privilege.WRITE)])
    else:
        blocks = tuple(int(t) for t in tile)
        index_launch(key, tile_colors(store.shape, blocks), [Arg(store, Privilege.WRITE, blocks)])


def zeros(shape: Sequence[int], dtype: Any = np.float64,
          tile: Sequence[int] | None = None) -> Store:
    """A new store of `shape` filled with zeros (see `full`)."""
    return full(shape, 0, dtype, tile)
