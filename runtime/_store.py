"""Tensor storage on Legate: NumPy in, NumPy out, never a fresh store.

Guards against LEGATE_NOTES.md's wrong-data behaviours:

- 2 and 3: every `Store` is written in full when it is made, either by
  attaching a private copy of an array or by a full-domain task that writes
  the fill value. `LogicalStore.fill` is never used, and no launch can meet a
  store that nothing has written.
- 4: `to_numpy` never maps the store itself. It copies it into a temporary
  store attached to a new NumPy buffer and maps that one, so later launches
  on the store do not pay for a lingering inline mapping.
- 5: stores made from arrays are not left attached: the array is attached
  whole for one copy into a store Legate owns, then detached. (Launches on
  an attached store wait for completion each time, like after an inline
  mapping; bench/launch_overhead.py measures it.)
"""

from __future__ import annotations

import gc
import math
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal.errors import DistalError, NotSupportedYet, RuntimeFailure
from distal.lower.executable import check_store_memory

from ._copy import copy_store
from ._ranks import check_failures_everywhere
from ._recording import abandon_recording
from ._registry import release_transient
from ._start import ensure_started, legate_runtime, work_done, work_pending

__all__ = ["Store", "dropped_bytes", "ensure_room", "fence", "keep_until_fence", "legate_type", "live_bytes",
           "read_back", "stores_made", "tile_of", "to_numpy", "wrap"]

_TYPES = {
    "bool": "bool_",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
}


def legate_type(dtype: np.dtype[Any]) -> Any:
    """The Legate type of a NumPy dtype."""
    from legate.core import types

    name = _TYPES.get(np.dtype(dtype).name)
    if name is None:
        raise NotSupportedYet(
            f"expected a boolean, integer, float or complex dtype, but found {dtype}"
        )
    return getattr(types, name)


# Legate handles kept alive until the next blocking fence. Dropping the last
# reference to a LogicalStore whose launches are still queued runs its C++
# destructor on the main thread, which waits for Legion while holding the GIL;
# the queued Python tasks wait for the GIL: the process hangs (seen with gdb).
# So no store is freed while work may be queued: `fence()` frees them.
_KEEP_ALIVE: list[Any] = []
_KEEP_ALIVE_LIMIT = 512  # to_numpy fences (and frees) once this many are held,
_KEEP_ALIVE_BYTES = 1 << 30  # or once they hold this many bytes
_kept_bytes = 0
_READ_CHECKED_FROM = 1 << 20  # smaller reads cannot matter next to the 16 MiB overhead every check adds
_GC_ALLOCATIONS = 100_000  # or once this many objects were allocated since the last collection

# Bytes of every store distal made and still references, views (slices, tiles, promotions) excluded:
# what other tensors hold when a plan is checked against Legate's memory (distal.lower.memory). Keyed
# by the Legate storage (`_root_key`), counted once however many `Store`s wrap it. An entry goes when
# its last `Store` is collected, but Legate frees the memory only at the next fence (_KEEP_ALIVE holds
# the handle until then): its bytes move to `_dropped` and count until that fence. (Not counting them
# let a tensor placed from host data next to the dropped staging store of the tensor placed before it
# overrun Legate's memory: the mapper aborted the process.)
_LIVE: dict[tuple[str, int], int] = {}
_WRAPPERS: dict[tuple[str, int], int] = {}  # how many live `Store`s wrap each entry of _LIVE
_dropped = 0
_made = 0  # stores of their own (not views) made so far
# repr(LogicalStore) names its storage: "... storage: Storage(12) {kind: Region, level: 0, ...}"; a
# view at offset 0 (a slice from 0, a partition's first child) is not `transformed` but has level > 0
_STORAGE = re.compile(r"storage: Storage\((\d+)\) \{kind: \w+, level: (\d+)")


def _root_key(store: Store) -> tuple[str, int] | None:
    """The key of the storage `store` holds on its own; None for a view of another store's storage."""
    if store.block_of is not None or getattr(store.handle, "transformed", True):
        return None
    found = _STORAGE.search(repr(store.handle))
    if found is None:  # a Legate whose repr says nothing of the storage: count the store as its own
        return ("object", id(store))
    return None if found.group(2) != "0" else ("storage", int(found.group(1)))


def _drop(key: tuple[str, int]) -> None:
    """A store's wrapper was collected: at its storage's last wrapper, its bytes stay held (by
    _KEEP_ALIVE's handle) until the next fence."""
    global _dropped
    left = _WRAPPERS.get(key, 0) - 1
    if left > 0:
        _WRAPPERS[key] = left
        return
    _WRAPPERS.pop(key, None)
    nbytes = _LIVE.pop(key, None)
    if nbytes is not None:
        _dropped += nbytes


@dataclass(eq=False)
class Store:
    """A Legate store of `shape` and `dtype` that has been written in full.

    `handle` is the legate `LogicalStore`. `buffer` keeps alive the NumPy
    memory a store was attached to, when it was.
    """

    handle: Any
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    buffer: np.ndarray | None = field(default=None, repr=False)
    # For a block made by `tile_of`: (the store it is a block of, tile shape, color). Pinned launches
    # take the block through a partition of that store, never through the sub-store (see `tile_of`).
    block_of: tuple[Store, tuple[int, ...], tuple[int, ...]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        global _kept_bytes, _made
        _KEEP_ALIVE.append(self.handle)
        nbytes = math.prod(self.shape) * self.dtype.itemsize
        _kept_bytes += nbytes
        key = _root_key(self)
        if key is not None:  # a store of its own, not a view of one
            _made += 1
            _LIVE[key] = nbytes
            _WRAPPERS[key] = _WRAPPERS.get(key, 0) + 1
            weakref.finalize(self, _drop, key)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)


def wrap(handle: Any, dtype: np.dtype[Any], buffer: np.ndarray | None = None) -> Store:
    """A `Store` around a legate store that the caller has written in full."""
    shape = tuple(int(x) for x in handle.shape)
    return Store(handle=handle, shape=shape, dtype=np.dtype(dtype), buffer=buffer)


def tile_of(store: Store, tile: tuple[int, ...], color: tuple[int, ...]) -> Store:
    """The block of `store` at `color` when it is cut into `tile`-sized blocks.

    The result shares the store's data (a view), for single-point launches. `point_launch` reads
    and writes it through a tiling partition of `store` (`block_of`), not through the sub-store:
    freeing a store whose launches had used sub-stores of it crashed Legion (SIGSEGV in
    `DiscardOp::trigger_ready`, issue 11 reproducer 4).
    """
    colors = tuple(-(-n // max(t, 1)) for n, t in zip(store.shape, tile, strict=True))
    if len(color) != store.ndim or any(not 0 <= c < n for c, n in zip(color, colors)):
        raise DistalError(
            f"expected a tile color within {colors}, but found {color} "
            f"for a store of shape {store.shape} cut into {tile}"
        )
    child = store.handle.partition_by_tiling(tile).get_child_store(*color)
    return Store(handle=child, shape=tuple(int(x) for x in child.shape), dtype=store.dtype,
                 block_of=(store, tuple(tile), tuple(color)))


def stores_made() -> int:
    """How many stores of their own (not views of another) distal has made in this process."""
    return _made


def keep_until_fence(obj: Any) -> None:
    """Hold `obj` (Legate handles, or something holding them) until the next blocking fence: freeing a
    store while launches on it are queued can hang the process (see `_KEEP_ALIVE`)."""
    _KEEP_ALIVE.append(obj)


def live_bytes(exclude: Iterable[Store] = ()) -> int:
    """Bytes held in Legate's memory by the stores distal made (views not counted), but `exclude`: those it
    still references, and those dropped since the last fence (Legate frees them at the next one)."""
    skip = {key for s in exclude if (key := _root_key(s)) is not None}
    return sum(b for key, b in _LIVE.items() if key not in skip) + _dropped


def dropped_bytes() -> int:
    """Bytes of the stores dropped since the last fence: still held until the next one frees them."""
    return _dropped


def ensure_room(what: str, nbytes: int) -> None:
    """Raise `OutOfMemory` before a store of `nbytes` is made that cannot fit next to the live stores
    (`distal.lower.memory.check_store_memory`); one fence first frees what nothing references."""
    machine = ensure_started()
    try:
        check_store_memory(what, nbytes, machine, live_bytes())
    except DistalError:
        fence()
        check_store_memory(what, nbytes, machine, live_bytes())


def to_numpy(store: Store) -> np.ndarray:
    """A NumPy copy of the store's current contents (waits for pending launches).

    Also raises, as `RuntimeFailure`, any kernel failure recorded so far (on
    any rank: every rank raises it, `_ranks.check_failures_everywhere`).
    """
    result = read_back(store)
    # A fence is an operation every rank must issue alike: the allocation count (which differs between ranks
    # that run different Python, a print on rank 0) decides it only with one rank.
    allocated = gc.get_count()[0] > _GC_ALLOCATIONS and ensure_started().ranks == 1
    if len(_KEEP_ALIVE) > _KEEP_ALIVE_LIMIT or _kept_bytes > _KEEP_ALIVE_BYTES or allocated or work_pending():
        fence()  # also gives back the user's GC and BLAS settings (_start.work_queued); raises failures
    else:
        _check_failures(ran=False)  # nothing of distal's was launched since the last fence
    return result


def read_back(store: Store) -> np.ndarray:
    """A NumPy copy of the store's current contents (waits for the launches writing it); reports no failures.

    With several ranks every rank gets the whole store.
    """
    runtime = legate_runtime()
    nbytes = math.prod(store.shape) * store.dtype.itemsize
    if nbytes > _READ_CHECKED_FROM:
        # the copy into the attached host buffer goes through an instance of Legate's own memory
        # (measured: reading 64 MB of blocks back aborted the process where 32 MB were left)
        ensure_room(f"reading a {store.dtype} store of shape {list(store.shape)} back to the host (Legate copies "
                    "it through its own memory)", nbytes)
    result = np.empty(store.shape, dtype=store.dtype)
    if result.size > 0:
        # a 0-d store is read as one element, through a 1-d view of it: legate 26.1 aborts the process attaching
        # a 0-d buffer, and Legate's own copy takes no view (`_versions`), so the copy task reads it
        flat = result.reshape(result.shape or (1,))
        source = store.handle if store.shape else store.handle.promote(0, 1)
        target = runtime.create_store_from_buffer(legate_type(store.dtype), flat.shape, flat, False)
        copy_store(target, source, by_task=True if not store.shape else None)
        mapped = np.asarray(target.get_physical_store())
        if not np.shares_memory(mapped, result):
            flat[...] = mapped
        del mapped
        target.detach()
    return result


def _check_failures(ran: bool) -> None:
    check_failures_everywhere(ran)


def fence() -> None:
    """Wait until every launch issued so far has run; raise kernel failures.

    Stores nothing references any more are freed here, when no launch is queued.
    """
    global _kept_bytes, _dropped
    ran = work_pending()  # whether distal launched anything since the last fence (the same on every rank)
    abandon_recording()  # a run that waits inside is not replayed, and must not keep what this fence frees
    legate_runtime().issue_execution_fence(block=True)
    failure: RuntimeFailure | None = None
    try:
        _check_failures(ran)  # with several ranks its launches run and are read here, before the clean-up
    except RuntimeFailure as error:
        failure = error
    _KEEP_ALIVE.clear()
    _kept_bytes = 0
    release_transient()  # plans' task bodies (and, through them, their tensors' data)
    collect_garbage()
    _dropped = 0  # nothing is queued: Legate has freed the dropped stores' memory (those collected just now too)
    work_done()
    if failure is not None:
        raise failure


def collect_garbage(force: bool = False) -> None:
    """Collect cycles as Python's automatic collector would at this point (it is paused while
    distal's tasks may be queued, see _start.work_queued): the youngest generation past its threshold, and an older
    one when enough younger collections happened. Call only with nothing queued."""
    if force:
        gc.collect()
        return
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1, 0):
        if counts[generation] >= max(thresholds[generation], 1):
            gc.collect(generation)
            return
