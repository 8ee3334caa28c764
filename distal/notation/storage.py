"""What a tensor's data must offer: the storage protocol, and its host implementation.

A `Tensor` holds exactly one `Storage` (or none: it was never written, and
reads as zeros). Two kinds implement the protocol: `HostStorage` here, a
NumPy array on the host, and the runtime's stores on Legate
(`distal.runtime.TensorStore`, one store of the whole tensor, and
`distal.runtime.FormatStore`, the tensor's blocks laid out by its format).
The runtime gives a tensor its data only through `Tensor.bind`.

>>> import numpy as np
>>> h = HostStorage(np.arange(6.0).reshape(2, 3))
>>> h.shape, h.dtype, h.format, h.nbytes, h.on_legate
((2, 3), dtype('float64'), None, 48, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from distal.format.format import Format

__all__ = ["HostStorage", "Storage", "host_array", "host_mirror"]


@runtime_checkable
class Storage(Protocol):
    """A tensor's data, wherever it lives."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        ...

    @property
    def dtype(self) -> np.dtype[Any]:
        """The element type of the data."""
        ...

    @property
    def format(self) -> Format | None:
        """The format the data is laid out by (None: one undistributed array)."""
        ...

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's elements (not counting copies along broadcast dimensions)."""
        ...

    @property
    def on_legate(self) -> bool:
        """Whether the data lives in Legate stores (False: a NumPy array on the host)."""
        ...

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data that the caller owns (waits for launches writing it)."""
        ...


class HostStorage:
    """A tensor's data as a NumPy array on the host (held as given: the caller hands over its copy)."""

    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self._data.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._data.dtype

    @property
    def format(self) -> Format | None:
        return None

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def on_legate(self) -> bool:
        return False

    def to_numpy(self) -> np.ndarray:
        return self._data.copy()

    def held(self) -> np.ndarray:
        """The array itself (no copy, writeable as held): for `dt.Tensor.to_numpy` handing over a temporary's."""
        return self._data

    def view(self) -> np.ndarray:
        """The data itself as a read-only view (no copy): for readers that copy it elsewhere, such as placement."""
        view = self._data.view()
        view.flags.writeable = False
        return view

    def __repr__(self) -> str:
        shape = "x".join(str(n) for n in self.shape) if self.shape else "scalar"
        return f"<HostStorage {shape} {self.dtype.name} on the host>"


def host_mirror(storage: Any) -> np.ndarray | None:
    """A read-only host array known to equal `storage`'s data, where the runtime keeps one (the array a store on
    Legate was placed from, kept until a plan writes the store: `runtime/_tensor_storage.py`, `MIRROR_MAX`);
    None otherwise. Readers on the host (an eager run) take it instead of reading the store back."""
    return getattr(storage, "mirror", None)


def host_array(storage: Any) -> np.ndarray | None:
    """`storage`'s data where it already is in host memory, as a read-only view (no copy): a `HostStorage`'s
    array, or the host copy a store on Legate keeps (`host_mirror`); None otherwise (no storage, or a store on
    Legate without that copy, which only a read-back gives)."""
    if isinstance(storage, HostStorage):
        return storage.view()
    mirror = host_mirror(storage)
    if mirror is None:
        return None
    view = mirror.view()
    view.flags.writeable = False
    return view
