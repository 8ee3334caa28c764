"""Tensors: named, shaped operands that hold data and the statement computing them."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from distal.errors import DtypeError, FormatError, NotationError, ShapeError
from distal.host import check_host_allocation
from distal.notation.ast import Access, Accumulate, Assignment, IndexVar, as_expr
from distal.notation.check import check_statement
from distal.notation.storage import HostStorage, Storage
from distal.notation.variable import TensorVar, fresh_uid, register
from distal.sizes import MachineDim, Param, Size

if TYPE_CHECKING:
    from distal.format.format import Format
    from distal.runtime import TensorData
    from distal.schedule.schedule import Schedule

__all__ = ["Tensor"]

# NumPy's numeric dtypes that numpy.einsum computes with (bool is not: its + is `or`, and index
# notation's sums would silently become `any`)
_DTYPES = (
    np.float64, np.float32, np.float16,
    np.int64, np.int32, np.int16, np.int8,
    np.uint64, np.uint32, np.uint16, np.uint8,
    np.complex128, np.complex64,
)
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def check_dtype(dtype: Any, name: str) -> np.dtype:
    """`dtype` as a NumPy dtype that distal computes with; a `DtypeError` naming it otherwise."""
    try:
        dt: np.dtype = np.dtype(dtype)
    except TypeError as exc:
        raise DtypeError(f"expected a NumPy dtype for {name}, but found {dtype!r}") from exc
    if dt.type not in _DTYPES:
        raise DtypeError(
            f"expected a numeric dtype ({', '.join(np.dtype(d).name for d in _DTYPES)}) "
            f"for {name}, but found {dt.name}"
        )
    return dt


class Tensor:
    """A dense tensor: name, shape, dtype, an optional format, and its data.

    Its identity (`name`, `shape`, `dtype`, `casting`) is fixed when it is
    made: assigning one raises AttributeError. Its data is one `Storage`
    (`tensor.storage`: a `HostStorage` NumPy array, or the runtime's stores
    on Legate; None until written), replaced only through `set_array`,
    `place`, `redistribute` and, by the runtime, `bind`.

    Statements do not hold the tensor: `A[i, j]` is an `Access` of
    `A.var`, the immutable `TensorVar` (name, shape, dtype, casting, format,
    uid) that the IR refers to; another format gives another var. The
    statement computing the tensor (`assignment`) is recorded with the user
    tensors of its vars (`operands`), which schedules and plans carry as
    their bindings.

    `dtype` is any of NumPy's numeric dtypes but bool. A statement computing
    the tensor computes as `numpy.einsum(..., out=tensor)` does: in NumPy's
    promoted type of its operands, literals and this tensor, cast into this
    tensor by `casting` (NumPy's rule names; "same_kind", the default, refuses
    a float right side into an integer tensor when the statement is built;
    "unsafe" allows it in statements without sums, truncating as NumPy's
    astype does).

    >>> import distal as dt
    >>> A = dt.Tensor("A", (2, 3))
    >>> A.shape, A.dtype
    ((2, 3), dtype('float64'))
    """

    def __init__(
        self,
        name: str,
        shape: tuple[Size, ...] | list[Size] = (),
        format: Any = None,
        *,
        dtype: Any = np.float64,
        casting: str = "same_kind",
    ) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise NotationError(f"expected an identifier as tensor name, but found {name!r}")
        if isinstance(shape, int):
            shape = (shape,)
        dims: list[Size] = []
        for s in shape:
            if isinstance(s, MachineDim):
                s = s.size
            if isinstance(s, Param):
                dims.append(s)
            elif isinstance(s, bool) or not isinstance(s, int | np.integer) or int(s) < 0:
                raise ShapeError(
                    f"expected non-negative integer extents for {name}, but found {s!r}"
                )
            else:
                dims.append(int(s))
        dt = check_dtype(dtype, name)
        if casting not in _CASTINGS:
            raise DtypeError(f"expected casting= one of {', '.join(_CASTINGS)} for {name}, but found {casting!r}")
        self._name = name
        self._shape: tuple[Size, ...] = tuple(dims)
        self._dtype = dt
        self._casting = casting
        self._var = TensorVar(self._name, self._shape, dt, casting, None, fresh_uid())
        self.assignment: Assignment | None = None
        # the user tensors of every var in `assignment` (strong: a plan of it keeps them alive)
        self.operands: tuple[Tensor, ...] = ()
        self._storage: Storage | None = None
        self._interface: tuple[Storage, dict[str, Any]] | None = None  # (storage, Legate data interface) handed out
        register(self)
        if format is not None:
            self.set_format(format)

    # -- identity (read-only) ------------------------------------------------------

    @property
    def name(self) -> str:
        """The tensor's name (read-only)."""
        return self._name

    @property
    def shape(self) -> tuple[Size, ...]:
        """The tensor's extents, integers or `dt.Param` (read-only)."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The tensor's element type (read-only)."""
        return self._dtype

    @property
    def casting(self) -> str:
        """How a statement's right side is cast into this tensor, by NumPy's casting rules (read-only)."""
        return self._casting

    @property
    def var(self) -> TensorVar:
        """The immutable variable the IR refers to: identity and current format (a new one after a format change)."""
        return self._var

    # -- format ----------------------------------------------------------------

    @property
    def format(self) -> Format | None:
        """The tensor's format (None: one undistributed array); change it with `set_format` or `redistribute`."""
        return self._var.format

    @format.setter
    def format(self, fmt: Format | None) -> None:
        if fmt is not self._var.format:
            v = self._var
            self._var = TensorVar(v.name, v.shape, v.dtype, v.casting, fmt, v.uid)

    def set_format(self, fmt: Any) -> None:
        """Give the tensor the format `fmt` (checked against its order); its data is not moved.

        Data already placed on Legate by another format stays as it is and
        is laid out by `fmt` at its next use on Legate (a plan run, `place`);
        to move placed data now, on the same machine, use `redistribute`.
        """
        check = getattr(fmt, "check_tensor", None)
        if check is None:
            raise FormatError(
                f"expected a dt.Format as the format of {self.name}, but found {type(fmt).__name__} "
                "(give data with dt.Tensor.from_array or tensor.set_array)"
            )
        check(self)
        self.format = fmt

    # -- notation ----------------------------------------------------------------

    @property
    def order(self) -> int:
        return self._var.order

    def shape_text(self) -> str:
        return self._var.shape_text()

    def _indices(self, key: object) -> tuple[IndexVar, ...]:
        if key is None or key == ():
            return ()
        if isinstance(key, IndexVar):
            return (key,)
        if isinstance(key, tuple):
            return key  # type: ignore[return-value]
        raise NotationError(
            f"expected index variables to index {self.name}, but found {key!r}"
        )

    def __getitem__(self, key: object) -> Access:
        access = Access(self._var, self._indices(key))
        # The access names only the var. Until a statement records it, this tensor stays alive
        # while the access does (`A[i] = Tensor.from_array("B", b)[i]` drops B before A binds it);
        # `record` then lets go (the statement's output holds its operands from there on).
        _PENDING[id(access)] = weakref.finalize(access, _release, id(access), self)
        return access

    def __setitem__(self, key: object, value: object) -> None:
        lhs = Access(self._var, self._indices(key))
        if isinstance(value, Accumulate):
            if value.target != lhs:
                raise NotationError(
                    f"expected += to update {value.target}, but found it assigned to {lhs}"
                )
            stmt = Assignment(lhs, value.rhs, accumulate=True)
        else:
            stmt = Assignment(lhs, as_expr(value))
        self.record(check_statement(stmt))

    def record(self, stmt: Assignment) -> None:
        """Make `stmt` (whose left side is this tensor) the statement computing this tensor.

        Keeps the user tensors of its vars (`operands`, from the live
        registry), so that a schedule or plan of it can reach their data.
        """
        from distal.notation.variable import Bindings

        assert stmt.lhs.tensor.uid == self._var.uid, (stmt.lhs.tensor, self._var)
        bound = Bindings.of_vars(v for v in stmt.tensors() if v.uid != self._var.uid)
        self.operands = (self, *bound.values())
        self.assignment = stmt
        for access in stmt.rhs.accesses():
            pending = _PENDING.pop(id(access), None)
            if pending is not None:
                pending.detach()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        """The tensor in words: name, shape and dtype, its format and where its data is.

        >>> import numpy as np
        >>> Tensor.from_array("B", np.ones((2, 3)))
        <Tensor B: 2x3 float64, data on the host>
        """
        ints = all(isinstance(n, int) for n in self.shape)
        shape = ("x" if ints else " x ").join(str(n) for n in self.shape) if self.shape else "scalar"
        parts = [f"{shape} {self.dtype.name}"]
        fmt = self.format
        if fmt is not None:
            parts.append(f"distributed {fmt} over {fmt.machine.describe()}")
        storage = self._storage
        if storage is None:
            parts.append("no data yet (it reads as zeros)")
        else:
            parts.append("data on Legate" if storage.on_legate else "data on the host")
        return f"<Tensor {self.name}: {', '.join(parts)}>"

    def __str__(self) -> str:
        return self.name

    # -- scheduling ------------------------------------------------------------

    def schedule(self) -> Schedule:
        """The default schedule of the statement that computes this tensor."""
        from distal.schedule.schedule import Schedule

        if self.assignment is None:
            raise NotationError(
                f"expected a statement computing {self.name} (e.g. {self.name}[i] = ...), "
                "but found none"
            )
        from distal.notation.variable import Bindings

        return Schedule.of(self.assignment, Bindings(self.operands))

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
          format (`Format.placement`, paper section 5.3) at once when
          distal's runtime is running, and otherwise at its first use on
          Legate (a plan run, `redistribute`, `place`), so that a session
          that only compiles, explains or runs the reference executor never
          starts Legate.
        """
        if _legate_array(array):
            copied = _runtime().copy_in(array)
            check_dtype(copied.dtype, name)
            t = cls(name, copied.shape, format, dtype=copied.dtype)
            t.bind(copied.storage(t.format))
            return t
        check_host_allocation(f"a copy of {name}'s data", np.shape(array), getattr(array, "dtype", np.float64))
        data = np.array(array, copy=True)
        check_dtype(data.dtype, name)
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
        _runtime().place(self)
        return self

    def to_cupynumeric(self) -> Any:
        """The tensor's data as a cuPyNumeric array, handed over on Legate (no host copy).

        cuPyNumeric gets its own copy of the data, made by Legate (from the
        blocks of a tensor with a format, gathered by launches), so changing
        one does not change the other. Same as ``cupynumeric.asarray(tensor)``.
        """
        return _runtime().to_cupynumeric(self)

    @property
    def __legate_data_interface__(self) -> dict[str, Any]:
        """The Legate data interface (version 1) of a copy of the tensor's data, made on Legate."""
        cached = self._interface
        if cached is not None and cached[0] is self._storage:
            return cached[1]
        held: Storage
        iface: dict[str, Any]
        held, iface = _runtime().interface(self)  # placed first, as `place` does
        self._interface = (held, iface)
        return iface

    def concrete_shape(self) -> tuple[int, ...]:
        """The integer extents; a `ShapeError` while one is a `dt.Param` (bind it first)."""
        return self._var.concrete_shape()

    def set_array(self, array: Any) -> None:
        """Replace the tensor's data (shape and dtype must match)."""
        data = np.asarray(array)
        if data.shape != self.concrete_shape():
            raise ShapeError(
                f"expected data of shape {self.concrete_shape()} for {self.name}, "
                f"but found {data.shape}"
            )
        self.bind(HostStorage(np.array(data, dtype=self.dtype, copy=True)))

    @property
    def storage(self) -> Storage | None:
        """The tensor's data (None: never written, reads as zeros); replace it with `bind` or `set_array`."""
        return self._storage

    @property
    def has_data(self) -> bool:
        """Whether the tensor holds data, on the host or on Legate."""
        return self._storage is not None

    @property
    def on_legate(self) -> bool:
        """Whether the tensor's data lives on Legate (False: on the host, or no data)."""
        return self._storage is not None and self._storage.on_legate

    def bind(self, storage: Storage | None) -> None:
        """Make `storage` the tensor's data (the runtime's one way to give a tensor data; None forgets it).

        `storage` must have the tensor's shape; its format, if any, is the
        layout its data is in (the tensor's own `format` is not changed).
        """
        if storage is not None and all(isinstance(n, int) for n in self.shape):
            assert tuple(storage.shape) == self.shape, (
                f"expected storage of shape {self.shape} for {self.name}, but found {storage.shape}"
            )
        self._storage = storage

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the tensor's data (zeros if it was never written)."""
        if self._storage is not None:
            return np.asarray(self._storage.to_numpy(), dtype=self.dtype)  # the storage hands over its own copy
        check_host_allocation(f"{self.name}'s zeros (it has no data)", self.concrete_shape(), self.dtype)
        return np.zeros(self.concrete_shape(), dtype=self.dtype)

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
            _runtime().redistribute(self, plan)  # moves the data laid out by `old`, the format it has until below
        self.format = format
        return plan


# id of an access made by `Tensor.__getitem__` -> the finalizer keeping its tensor alive, until a
# statement records the access or the access is collected
_PENDING: dict[int, weakref.finalize] = {}


def _release(key: int, tensor: Tensor) -> None:
    """An access died before any statement recorded it: its tensor is no longer kept for it."""
    _PENDING.pop(key, None)


def _runtime() -> TensorData:
    """The runtime's one entry point for a tensor's data on Legate (`distal.runtime.tensor_data`).

    Imported when first needed: the notation layer sits below the runtime,
    and a session that only compiles, explains or runs the reference
    executor never uses it (asking whether Legate runs does not start it).
    """
    from distal.runtime import tensor_data

    return tensor_data


def _legate_array(array: Any) -> bool:
    """Whether ``array`` is data on Legate to copy there (it has ``__legate_data_interface__``), not on the host."""
    if getattr(type(array), "__legate_data_interface__", None) is None:
        return False
    return not (isinstance(array, Tensor) and not array.on_legate)  # host data: copying it there starts no Legate
