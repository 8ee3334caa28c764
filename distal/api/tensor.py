"""The user's tensor: `dt.Tensor`, a `TensorBase` with the methods that schedule it and move its data.

`TensorBase` (`distal.notation.tensor_base`) is the data every layer below
reads; `Tensor` adds what calls down into them: `schedule()` (the user's
`dt.Schedule`), `placement()` and `placement_text()` (the placement
statement of its format, `distal.cin.placement`), `from_array`, `place`,
`redistribute` (the redistribution
synthesizer, `distal.redist.formats`), NumPy's `__array__`,
`to_cupynumeric` and `__legate_data_interface__` (the runtime's one entry
point for a tensor's data, `distal.runtime.tensor_data`). It acts as a
NumPy array (`distal.api._array`: NEP 13/18, operators, indexing by
integers and slices that reads and writes the data, while index variables
write notation), and every method that can touch Legate runs in
`distal.api._threads.legate_section()`, so any thread may call it.

>>> import distal as dt
>>> A = dt.Tensor("A", (2, 3))
>>> A.shape, A.dtype
((2, 3), dtype('float64'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from distal.api._array import ArrayBehaviour, is_notation_key
from distal.api._temporary import handed_over, is_temporary
from distal.api._threads import free_here, legate_section
from distal.api.schedule import Schedule
from distal.cin.placement import placement, placement_text
from distal.errors import FormatError, NotationError
from distal.format.format import Format
from distal.host import check_host_allocation
from distal.notation.storage import HostStorage, Storage, host_array
from distal.notation.tensor_base import TensorBase, check_dtype
from distal.notation.variable import Bindings

if TYPE_CHECKING:
    from distal.cin.relations import Relation
    from distal.cin.statements import Stmt
    from distal.runtime import TensorData

__all__ = ["Tensor"]


class Tensor(TensorBase, ArrayBehaviour):
    """A dense tensor as the user holds it: a `TensorBase` (name, shape, dtype, format, data, statement)
    that schedules its statement and moves its data.

    See `TensorBase` for its identity, format, statement and storage.

    >>> import numpy as np
    >>> Tensor.from_array("B", np.ones((2, 3)))
    <Tensor B: 2x3 float64, data on the host>
    """

    # (storage, Legate data interface) last handed out by `__legate_data_interface__`
    _interface: tuple[Storage, dict[str, Any]] | None = None

    # -- indexing: notation, or the data ----------------------------------------

    def __getitem__(self, key: object) -> Any:
        """`A[i, j]` (index variables) is notation, an `Access` of the tensor; integers, slices, arrays and `...`
        read the data as NumPy indexes it (`distal.api._array`).

        >>> import numpy as np
        >>> t = Tensor.from_array("t", np.arange(6.0).reshape(2, 3))
        >>> t[1, 1:]
        array([4., 5.])
        """
        if is_notation_key(key):
            return super().__getitem__(key)
        return self._read(key)

    def __setitem__(self, key: object, value: object) -> None:
        """`A[i, j] = ...` (index variables) records the statement computing the tensor; integers, slices, arrays
        and `...` write the data as NumPy assigns it (into a copy, which becomes the tensor's data, on the host).

        >>> import numpy as np
        >>> t = Tensor.from_array("t", np.zeros((2, 3)))
        >>> t[1, 1:] = 7
        >>> t.to_numpy()
        array([[0., 0., 0.],
               [0., 7., 7.]])
        """
        if is_notation_key(key):
            super().__setitem__(key, value)
        else:
            self._write(key, value)

    # -- scheduling ------------------------------------------------------------

    def schedule(self) -> Schedule:
        """The default schedule of the statement that computes this tensor (a `dt.Schedule`)."""
        if self.assignment is None:
            raise NotationError(
                f"expected a statement computing {self.name} (e.g. {self.name}[i] = ...), "
                "but found none"
            )
        return Schedule.of(self.assignment, Bindings(self.operands))

    # -- placement (paper 5.3) ---------------------------------------------------

    def placement(self, format: Format | None = None) -> tuple[Stmt, tuple[Relation, ...]]:
        """The concrete index notation statement that places this tensor in `format` (default: its own format),
        with its `s.t.` relations (paper section 5.3; `distal.cin.placement.placement`).

        >>> import distal as dt
        >>> T = dt.Tensor("T", (4, 4), dt.Format("xy -> x", dt.Machine(dt.Grid(2))))
        >>> print(T.placement()[0])
        ∀xo ∀xi ∀y T(x,y) = T(x,y)
        """
        return placement(self._placed_by(format), self)

    def placement_text(self, format: Format | None = None) -> str:
        """The placement statement in `format` (default: its own format) printed as in the paper.

        >>> import distal as dt
        >>> T = dt.Tensor("T", (4, 4), dt.Format("xy -> x", dt.Machine(dt.Grid(2))))
        >>> print(T.placement_text())
        ∀xo ∀xi ∀y T(x,y) s.t. divide(x, xo, xi, m.x), distribute({xo}, Grid(2)), communicate(T, xo)
        """
        return placement_text(self._placed_by(format), self)

    def _placed_by(self, format: Format | None) -> Format:
        """The format a placement statement is asked for: `format`, else the tensor's own."""
        fmt = format if format is not None else self.format
        if fmt is None:
            raise FormatError(
                f"expected a format to place {self.name} by, but found {self.name} without one; give it a "
                f"format or pass one ({self.name}.placement_text(dt.Format(...)))"
            )
        if not isinstance(fmt, Format):
            raise FormatError(f"expected a dt.Format to place {self.name} by, but found {type(fmt).__name__}")
        return fmt

    # -- data --------------------------------------------------------------------

    @classmethod
    def from_array(cls, name: str, array: Any, format: Any = None) -> Tensor:
        """A tensor holding a copy of `array`: NumPy, cuPyNumeric, or any object with ``__legate_data_interface__``.

        Where its data lives:

        * an array on Legate (cuPyNumeric, or anything with the Legate data
          interface) is copied by Legate, store to store, never through the
          host; with a format it is placed by that format at once;
        * a NumPy array (or any array-like) is copied on the host; with a
          format it is placed on Legate by the placement statement of its
          format (`distal.cin.placement`, paper section 5.3) at once when
          distal's runtime is running, and otherwise at its first use on
          Legate (a plan run, `redistribute`, `place`), so that a session
          that only compiles, explains or runs the reference executor never
          starts Legate.
        """
        with legate_section():
            if _legate_array(array):
                copied = _runtime().copy_in(array)
                check_dtype(copied.dtype, name)
                t = cls(name, copied.shape, format, dtype=copied.dtype)
                t.bind(copied.storage(t.format))
                return t
            check_host_allocation(f"a copy of {name}'s data", np.shape(array), getattr(array, "dtype", np.float64))
            data = np.array(array, copy=True)
            check_dtype(data.dtype, name)
            if not data.dtype.isnative:  # held in this machine's byte order: Legate reads the bytes as they are
                data = data.astype(data.dtype.newbyteorder("="))
            t = cls(name, data.shape, format, dtype=data.dtype)
            t.bind(HostStorage(data))
            if t.format is not None and not t.format.params and _runtime().running():
                t.place()
            return t

    def place(self) -> Tensor:
        """Put the tensor's data on Legate now, laid out by its format (starts Legate); returns the tensor.

        Runs the placement statement of the format (paper section 5.3) as
        one launch per holding processor, pinned to the processor
        `Machine.bind` gives it: each keeps its tile (copies along broadcast
        dimensions, only the face of fixed ones). A tensor without a format
        is uploaded as one store, and so is one whose format's machine is
        symbolic (a `dt.Param` size: it has no processors until bound).
        Placing a placed tensor does nothing.
        """
        with legate_section():
            _runtime().place(self)
            return self

    def to_cupynumeric(self) -> Any:
        """The tensor's data as a cuPyNumeric array, handed over on Legate (no host copy).

        cuPyNumeric gets its own copy of the data, made by Legate (from the
        blocks of a tensor with a format, gathered by launches), so changing
        one does not change the other. Same as ``cupynumeric.asarray(tensor)``.
        """
        with legate_section():
            return _runtime().to_cupynumeric(self)

    @property
    def __legate_data_interface__(self) -> dict[str, Any]:
        """The Legate data interface (version 1) of a copy of the tensor's data, made on Legate."""
        cached = self._interface
        if cached is not None and cached[0] is self._storage:
            return cached[1]
        held: Storage
        iface: dict[str, Any]
        with legate_section():
            held, iface = _runtime().interface(self)  # placed first, as `place` does
        self._interface = (held, iface)
        return iface

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the tensor's data (zeros if it was never written), read back from Legate where it lives
        (`TensorBase.to_numpy`), from any thread.

        Called on a temporary that holds its own host array (`dt.einsum(...).to_numpy()` of an eager result),
        the array itself is handed over instead of a copy: nothing else can see the tensor, which goes
        away when the call returns (`distal.api._temporary`; NumPy elides temporaries' copies the same way)."""
        if is_temporary(self):
            given = handed_over(self._storage)
            if given is not None:
                return given
        with legate_section():
            return super().to_numpy()

    def host_data(self) -> np.ndarray:
        """The tensor's data to read, not to keep: a read-only view of its host array, or of the host copy its
        store on Legate was placed from (while no plan has written the store), in the tensor's dtype; a copy
        (`to_numpy`) where there is neither. What `t + 1`, `t[0, 0]` and `float(t)` read (their results are new
        arrays), where `np.asarray(t)` and `to_numpy()` give a copy of the user's own."""
        data = host_array(self._storage)
        if data is None or data.dtype != self.dtype or data.shape != self.concrete_shape():
            return self.to_numpy()
        return data

    def __del__(self) -> None:
        # the stores this tensor holds are let go here, as Legion takes them: from a thread holding Legate's
        # context, in its turn (`distal.api._threads.free_here`)
        storage = getattr(self, "_storage", None)  # absent when __init__ refused its arguments
        if storage is not None and storage.on_legate:
            free_here(self._let_go)

    def _let_go(self) -> None:
        self._storage = None
        self._interface = None

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's array protocol (NumPy 2 semantics): `np.asarray(t)` is a new array of the tensor's data.

        The data belongs to distal (on Legate, or held for its plans), so an
        array is always a copy: `copy=None` (the default) and `copy=True` give
        one, in `dtype` when given; `copy=False` (never copy) raises
        `ValueError`, as NumPy 2 asks of objects that cannot share memory.

        >>> import numpy as np
        >>> t = Tensor.from_array("t", np.arange(3.0))
        >>> np.asarray(t, dtype=np.int32)
        array([0, 1, 2], dtype=int32)
        """
        if copy is False:
            raise ValueError(
                f"expected copy=None or copy=True to make an array of {self.name} (a distal tensor cannot share "
                f"its memory with NumPy), but found copy=False; np.asarray({self.name}) or "
                f"{self.name}.to_numpy() gives a copy"
            )
        data = self.to_numpy()  # already a new array that the caller owns
        return data if dtype is None else data.astype(dtype, copy=False)

    # -- redistribution ------------------------------------------------------------

    def redistribute(self, format: Any, method: str = "search") -> Any:
        """Move the tensor to `format` (same machine) on Legate; returns the plan that moved it.

        The plan (`distal.redist.formats.FormatProgram`) is synthesized from
        collectives between the distributed types of the two formats
        (`distal.redist.formats`); printing it shows its steps, cost and
        height. A tensor with data has it moved on Legate and keeps identical
        data; one without data just takes the new format.

        >>> import distal as dt
        >>> m = dt.Machine(dt.Grid(2, 2))
        >>> A = dt.Tensor("A", (4, 4), dt.Format("xy -> xy", m))
        >>> [str(s) for s in A.redistribute(dt.Format("xy -> yx", m)).steps], str(A.format)
        (['allpermute'], 'xy -> yx')
        """
        with legate_section():
            from distal.redist.finish import finish
            from distal.redist.formats import plan_redistribution

            old = self.format
            if old is None:
                raise FormatError(
                    f"expected a tensor with a format to redistribute, but found {self.name} without one; "
                    f"give it a format when making it (Tensor.from_array({self.name!r}, array, format))"
                )
            if getattr(format, "machine", None) != old.machine:
                raise FormatError(
                    f"expected a format on the machine of {self.name} ({old.machine!r}), but found {format!r}"
                )
            format.check_tensor(self)  # refuses a format of another order before anything moves
            has_data = self._storage is not None
            if not has_data and any(not isinstance(n, int) for n in self.shape):
                self.format = format
                return None
            plan = plan_redistribution(old, format, self.concrete_shape(), method)
            if has_data:
                # the finished moves, run on the data laid out by `old` (the format it has until below)
                _runtime().redistribute(self, finish(plan))
            self.format = format
            return plan


def _runtime() -> TensorData:
    """The runtime's one entry point for a tensor's data on Legate (`distal.runtime.tensor_data`).

    Imported when first needed (a downward import, kept out of `import distal`):
    a session that only compiles, explains or runs the reference executor never
    uses it (asking whether Legate runs does not start it).
    """
    from distal.runtime import tensor_data

    return tensor_data


def _legate_array(array: Any) -> bool:
    """Whether ``array`` is data on Legate to copy there (it has ``__legate_data_interface__``), not on the host."""
    if getattr(type(array), "__legate_data_interface__", None) is None:
        return False
    return not (isinstance(array, Tensor) and not array.on_legate)  # host data: copying it there starts no Legate
