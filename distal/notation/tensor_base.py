"""The data of a tensor: identity, format, storage, and the statement computing it (`TensorBase`).

TACO splits the tensor the user holds from the data the compiler reads;
distal does the same. `TensorBase` is the data, with what writing a
statement needs (`A[i, j] = ...`, `record`) and the runtime's one way to
give it data (`bind`): the compiler's layers (schedules, lowering, the
executors, the algorithm library and the auto search) read and make
`TensorBase` objects only. The user's `dt.Tensor` (`distal.api.tensor`)
derives from it and adds what calls up into those layers: `schedule()`,
`from_array`, `place`, `redistribute` and the array protocols.
"""

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

__all__ = ["TensorBase", "check_dtype"]

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
    """`dtype` as a NumPy dtype that distal computes with, in this machine's byte order (">f8" is float64 on a
    little-endian machine); a `DtypeError` naming it otherwise."""
    try:
        dt: np.dtype = np.dtype(dtype)
    except TypeError as exc:
        raise DtypeError(f"expected a NumPy dtype for {name}, but found {dtype!r}") from exc
    if dt.type not in _DTYPES:
        raise DtypeError(
            f"expected a numeric dtype ({', '.join(np.dtype(d).name for d in _DTYPES)}) "
            f"for {name}, but found {dt.name}"
        )
    return dt.newbyteorder("=") if not dt.isnative else dt  # a tensor's data is in this machine's byte order


class TensorBase:
    """A dense tensor's data: name, shape, dtype, an optional format, and its storage.

    Its identity (`name`, `shape`, `dtype`, `casting`) is fixed when it is
    made: assigning one raises AttributeError. Its data is one `Storage`
    (`tensor.storage`: a `HostStorage` NumPy array, or the runtime's stores
    on Legate; None until written), replaced only through `set_array`,
    `place`, `redistribute` and, by the runtime, `bind`. (The user's
    `dt.Tensor` derives from this class; code below the api makes and reads
    `TensorBase` objects, e.g. the data-less shadows the auto search compiles.)

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

    >>> A = TensorBase("A", (2, 3))
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
        self.operands: tuple[TensorBase, ...] = ()
        self._storage: Storage | None = None
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
        >>> B = TensorBase("B", (2, 3))
        >>> B.set_array(np.ones((2, 3)))
        >>> B
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

    # -- data --------------------------------------------------------------------

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

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the tensor's data (zeros if it was never written); its storage makes the copy
        (the runtime's stores read back from Legate)."""
        if self._storage is not None:
            return np.asarray(self._storage.to_numpy(), dtype=self.dtype)  # the storage hands over its own copy
        check_host_allocation(f"{self.name}'s zeros (it has no data)", self.concrete_shape(), self.dtype)
        return np.zeros(self.concrete_shape(), dtype=self.dtype)

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


# id of an access made by `TensorBase.__getitem__` -> the finalizer keeping its tensor alive, until a
# statement records the access or the access is collected
_PENDING: dict[int, weakref.finalize] = {}


def _release(key: int, tensor: TensorBase) -> None:
    """An access died before any statement recorded it: its tensor is no longer kept for it."""
    _PENDING.pop(key, None)
