"""Making stores: from a NumPy array, or filled with a value by a task (`copy_kernel` is `_copy`'s).

Both ways write the whole store before anyone can launch on it (guards for
LEGATE_NOTES.md behaviours 2 and 3): an array is copied in whole, and a fill
is a full-domain launch of a kernel, never `LogicalStore.fill`.

Before the first store is made, Legate's system memory pool is marked for
transparent huge pages (`advise_huge_pages`): Realm maps the pool as plain
anonymous memory, which Linux's default THP mode ("madvise") backs with 4 KiB
pages, while NumPy asks for huge pages on its own large arrays. Streaming
kernels (TTV, innerprod) read a tile 20-30% slower through 4 KiB pages
(measured: a matrix-vector product over 860 MB, 0.053 s with huge pages,
0.069 s without). `DISTAL_HUGE_PAGES=0` turns this off.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from distal.errors import NotSupportedYet

from ._copy import copy_kernel, copy_store
from ._launch import Arg, Privilege, index_launch, tile_colors
from ._registry import register_kernel
from ._start import ensure_started, legate_runtime
from ._store import Store, ensure_room, legate_type, wrap

__all__ = ["advise_huge_pages", "copy_kernel", "fill", "from_numpy", "full", "unwritten", "zeros"]

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


_MADV_HUGEPAGE = 14  # Linux <sys/mman.h>
_MAPPING = re.compile(r"([0-9a-f]+)-([0-9a-f]+) rw-p 00000000 00:00 0\s*$")
_advised: int | None = None


def pool_mappings(pool_bytes: int, maps: str) -> list[tuple[int, int]]:
    """The anonymous private mappings of /proc/self/maps text `maps` that can be a memory pool of
    `pool_bytes` (at least that large, at most 25% + 512 MiB more): (start, length) each."""
    found = []
    for line in maps.splitlines():
        m = _MAPPING.match(line)
        if m is None:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        if pool_bytes <= end - start <= pool_bytes * 5 // 4 + (512 << 20):
            found.append((start, end - start))
    return found


def advise_huge_pages() -> int:
    """Mark Legate's system memory pool for transparent huge pages (once); the bytes marked.

    Zero where it does not apply: not Linux, THP off, `DISTAL_HUGE_PAGES=0`,
    or no mapping of the pool's size found. Pages already touched keep
    their size; later first touches get huge pages.
    """
    global _advised
    with _lock:
        if _advised is not None:
            return _advised
        _advised = 0
        if os.environ.get("DISTAL_HUGE_PAGES", "1") == "0":
            return 0
        try:
            with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
                if "[never]" in f.read():
                    return 0
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError:
            return 0
        pool = ensure_started().sysmem_mb << 20
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start, length in pool_mappings(pool, maps):
            if libc.madvise(start, length, _MADV_HUGEPAGE) == 0:
                _advised += length
        return _advised


def _attachable(array: Any) -> np.ndarray:
    """`array` itself where Legate can attach it as it is (C-ordered, aligned, native byte order, at least 1-D),
    else a private copy that is. Legion aborts the process on an unaligned buffer ("External resources provided
    to attach operation ... are insufficient"), and a big-endian buffer would be read as native bytes."""
    if isinstance(array, np.ndarray):
        if array.ndim > 0 and array.flags.c_contiguous and array.flags.aligned and array.dtype.isnative:
            return array
        return np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)
    private = np.array(array, order="C", copy=True)
    return private if private.dtype.isnative else private.astype(private.dtype.newbyteorder("="))


def from_numpy(array: Any) -> Store:
    """A store holding a copy of `array` (any array-like); waits for the copy.

    The data is copied into a store Legate owns: launches on a store that
    stays attached to a NumPy buffer each wait for completion, as after an
    inline mapping (LEGATE_NOTES.md behaviour 4; bench/launch_overhead.py
    measures both), so the attachment lives only for the copy. A C-ordered,
    aligned NumPy array of native byte order is attached read-only as it is
    (the copy is done when this returns); anything else is first converted
    into one (`_attachable`).
    """
    private = _attachable(array)
    _check_ndim(private.shape)
    advise_huge_pages()
    if private.nbytes > _ROOM_CHECKED_FROM:
        # the attached host data and the store it is copied into both live in Legate's memory
        ensure_room(f"copying a {private.dtype} array of shape {list(private.shape)} onto Legate (its attached "
                    "host data and its store)", 2 * private.nbytes)
    runtime = legate_runtime()
    kind = legate_type(private.dtype)
    # a 0-d array is copied as one element and the store is a 0-d view of it: legate 26.1 aborts the process
    # attaching a 0-d buffer (`_versions`), so distal attaches none on either release
    buffer = private if private.shape else private.reshape(1)
    handle = runtime.create_store(kind, buffer.shape)
    if private.size > 0:
        source = runtime.create_store_from_buffer(kind, buffer.shape, buffer, True)
        copy_store(handle, source)
        source.detach()  # waits for the copy: `private` is not read after this
    return wrap(handle if private.shape else handle.project(0, 0), private.dtype)


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
    advise_huge_pages()
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
