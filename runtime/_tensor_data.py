"""A tensor's data life cycle on Legate: the one entry point of the user's `dt.Tensor` into the runtime.

`dt.Tensor` (distal/api/tensor.py, a `TensorBase` of distal/notation/tensor_base.py) holds
its data as one `Storage` (distal/notation/storage.py). Everything it asks
of Legate goes through `tensor_data`, a `TensorData`:

* taking in: `copy_in` copies an array of another Legate library (anything
  with ``__legate_data_interface__``) into a store distal owns, on Legate;
* placing: `place` lays the tensor's data out on Legate by its format (the
  placement statement, `_tensor_storage.place_store`), or uploads it as one
  store without one;
* reading back: no call here, the storage protocol does it
  (`Storage.to_numpy` of a `TensorStore` or `FormatStore`);
* moving: `redistribute` runs a finished redistribution (`distal.redist.moves.Moves`) on the tensor's
  blocks; the caller plans and finishes it (the runtime imports no synthesizer);
* handing out: `interface` (the Legate data interface of a copy, made on
  Legate) and `to_cupynumeric`;
* freeing: no call here either. A storage the tensor lets go of (replaced
  through `Tensor.bind`, or the tensor collected) keeps its Legate stores
  until the next blocking fence, which frees them (`_store._KEEP_ALIVE`):
  never while launches on them may be queued;
* `running` says whether Legate runs in this process, without starting it.

Importing this module imports no more of the runtime than `import distal`
does; each call imports what it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distal.notation.storage import HostStorage

from ._start import ensure_started, is_started

if TYPE_CHECKING:
    from distal.notation.storage import Storage
    from distal.notation.tensor_base import TensorBase
    from distal.redist.moves import Moves

    from ._store import Store
    from ._tensor_storage import FormatStore, TensorStore

__all__ = ["LegateCopy", "TensorData", "data_interface", "tensor_data"]


@dataclass(frozen=True, eq=False)
class LegateCopy:
    """A copy on Legate of another library's array (`TensorData.copy_in`): a store distal owns, and the array's
    shape (a 0-d array's store has shape (1,))."""

    store: Store
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The element type of the copy."""
        return self.store.dtype

    def storage(self, fmt: Any) -> Storage:
        """The copy as a tensor's storage: placed by ``fmt`` when it is a concrete format, else one store."""
        from ._tensor_storage import storage_of

        return storage_of(self.store, self.shape, fmt)


class TensorData:
    """What `dt.Tensor` asks of Legate (see the module docstring); the runtime's one instance is `tensor_data`."""

    __slots__ = ()

    def running(self) -> bool:
        """Whether distal's runtime has started Legate in this process (it does not start it)."""
        return is_started()

    def copy_in(self, array: Any) -> LegateCopy:
        """A copy of ``array`` (an object with ``__legate_data_interface__``) made by Legate, store to store."""
        from ._interop import legate_input

        found = legate_input(array)
        assert found is not None, type(array)  # the caller checked that it has the interface
        store, shape = found
        return LegateCopy(store, shape)

    def place(self, tensor: TensorBase) -> None:
        """Put ``tensor``'s data on Legate now, laid out by its format (starts Legate); nothing when it is there.

        A tensor without a format, or whose format's machine is symbolic,
        is uploaded as one store. Data already on Legate stays where it is
        when it is in the tensor's format (or the tensor has none to place by).
        """
        from ._tensor_storage import adopt, storage_of, with_mirror

        fmt = tensor.format
        held = tensor.storage
        if held is not None and held.on_legate and (fmt is None or fmt.params or held.format == fmt):
            return
        if fmt is None or fmt.params:
            placed = storage_of(None, tensor.concrete_shape(), None, tensor.to_numpy())
            tensor.bind(with_mirror(placed, held.held()) if isinstance(held, HostStorage) else placed)
        else:
            tensor.bind(adopt(held, tensor.to_numpy, fmt, tensor.dtype, tensor.concrete_shape()))

    def redistribute(self, tensor: TensorBase, moves: Moves) -> None:
        """Run the finished redistribution ``moves`` (`distal.redist.finish.finish` of the plan) on ``tensor``'s
        data, laid out by its format now (placed first if it is not); the tensor then holds the data in the
        target format (it takes that format itself afterwards)."""
        from ._redistribute import run_plan_steps
        from ._tensor_storage import adopt

        fmt = tensor.format
        assert fmt is not None, tensor
        held = adopt(tensor.storage, tensor.to_numpy, fmt, tensor.dtype, tensor.concrete_shape())
        tensor.bind(run_plan_steps(moves, held, name=tensor.name))

    def interface(self, tensor: TensorBase) -> tuple[Storage, dict[str, Any]]:
        """``tensor``'s storage on Legate (placed first) and the Legate data interface of a copy of it."""
        from ._tensor_storage import FormatStore, TensorStore

        self.place(tensor)
        held = tensor.storage
        assert isinstance(held, TensorStore | FormatStore), held
        return held, data_interface(held, tensor.concrete_shape())

    def to_cupynumeric(self, tensor: TensorBase) -> Any:
        """``tensor``'s data as a cuPyNumeric array of its own, copied on Legate (``cupynumeric.asarray``)."""
        ensure_started()
        import cupynumeric

        return cupynumeric.asarray(tensor)


tensor_data = TensorData()


def data_interface(storage: TensorStore | FormatStore, shape: tuple[int, ...]) -> dict[str, Any]:
    """The Legate data interface of a copy of a tensor's data, made on Legate (no host copy).

    A placed tensor's blocks are gathered by launches (`gather`); an
    unformatted one's store is copied store to store.
    """
    from legate.core import LogicalArray

    from ._copy import copy_store
    from ._make import zeros
    from ._start import legate_runtime
    from ._store import legate_type, wrap
    from ._tensor_storage import FormatStore, gather

    if isinstance(storage, FormatStore):
        copy = gather(storage)
    else:
        runtime = legate_runtime()
        source = storage.store
        copy = wrap(runtime.create_store(legate_type(source.dtype), source.shape), source.dtype)
        if math.prod(source.shape) > 0:
            copy_store(copy.handle, source.handle)
        else:
            copy = zeros(source.shape, source.dtype)
    handle = copy.handle.project(0, 0) if not shape else copy.handle
    return dict(LogicalArray.from_store(handle).__legate_data_interface__)
