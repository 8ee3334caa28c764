"""Tensor variables: what the IR refers to, and the bindings from them to the user's tensors.

TACO splits a tensor into the variable an expression names (`TensorVar`)
and the object holding data (`TensorBase`); distal does the same. A
`TensorVar` is immutable: name, shape, dtype, casting, format and `uid`,
the identity of the user `Tensor` (a `TensorBase`) it stands for (a workspace made by
`precompute` gets a fresh uid and no tensor). Every IR node (an `Access`,
a statement, a schedule's relations, a plan's `TensorInfo`) holds vars,
never a `Tensor`. A `Tensor`'s current var is `tensor.var`; giving it
another format gives it another var.

The data side is `Bindings`: from a var's uid to the user `Tensor` that
holds its data. A statement written as `A[i] = ...` records the tensors of
its vars on `A`; a schedule and the plan it compiles to carry them, and the
executors read and write data only through `plan.bindings.tensor(var)`.

>>> import distal as dt
>>> A = dt.Tensor("A", (2, 3))
>>> v = A.var
>>> v.name, v.shape, v.order, str(v), v is A.var
('A', (2, 3), 2, 'A', True)
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from distal.errors import NotationError, ShapeError
from distal.sizes import Size

if TYPE_CHECKING:
    from distal.format.format import Format
    from distal.notation.tensor_base import TensorBase

__all__ = ["Bindings", "TensorVar", "fresh_uid", "live_tensor"]

_UIDS = itertools.count(1)

# uid -> the user's tensor while it lives (a statement's output keeps its operands alive)
_LIVE: weakref.WeakValueDictionary[int, TensorBase] = weakref.WeakValueDictionary()


def fresh_uid() -> int:
    """A uid no tensor or workspace has had in this process."""
    return next(_UIDS)


def register(tensor: TensorBase) -> None:
    """Record `tensor` as the live tensor of its uid (weakly: the registry keeps nothing alive)."""
    _LIVE[tensor.var.uid] = tensor


def live_tensor(uid: int) -> TensorBase | None:
    """The user's tensor with this uid, if it is still alive."""
    return _LIVE.get(uid)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class TensorVar:
    """An immutable tensor variable: what an `Access` names (equal when every field is).

    >>> import distal as dt
    >>> v = dt.Tensor("B", (4,)).var
    >>> v.shape_text(), v.concrete_shape()
    ('(4,)', (4,))
    """

    name: str
    shape: tuple[Size, ...]
    dtype: np.dtype[Any]
    casting: str = "same_kind"
    format: Format | None = None
    uid: int = field(default_factory=fresh_uid)

    @property
    def order(self) -> int:
        return len(self.shape)

    def shape_text(self) -> str:
        return "(" + ", ".join(str(s) for s in self.shape) + ("," if self.order == 1 else "") + ")"

    def concrete_shape(self) -> tuple[int, ...]:
        out = []
        for s in self.shape:
            if not isinstance(s, int):
                raise ShapeError(f"tensor {self.name} has symbolic extent {s}; bind it first")
            out.append(s)
        return tuple(out)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        fmt = f", format {self.format}" if self.format is not None else ""
        shape = "x".join(str(n) for n in self.shape) if self.shape else "scalar"
        return f"<TensorVar {self.name}: {shape} {self.dtype.name}{fmt}>"


class Bindings(Mapping[int, "TensorBase"]):
    """From a var's uid to the user's `Tensor` holding its data (strong references).

    A workspace var has no tensor: `get(var)` is None for it, and the
    executors allocate it.
    """

    __slots__ = ("_by_uid",)

    def __init__(self, tensors: Iterable[TensorBase] = ()) -> None:
        self._by_uid: dict[int, TensorBase] = {t.var.uid: t for t in tensors}

    @classmethod
    def of_vars(cls, vars_: Iterable[TensorVar]) -> Bindings:
        """The live tensors of `vars_` from the registry; a `NotationError` naming a var whose tensor is gone."""
        found = []
        for v in vars_:
            t = live_tensor(v.uid)
            if t is None:
                raise NotationError(
                    f"expected a live tensor for {v.name} (uid {v.uid}), but found none: "
                    "it was dropped, or the var was not made by a dt.Tensor"
                )
            found.append(t)
        return cls(found)

    @classmethod
    def pairs(cls, items: Iterable[tuple[TensorVar, TensorBase]]) -> Bindings:
        """Each var's data in the tensor paired with it, which may hold another var of the same shape, dtype
        and format (a compiled plan run on other tensors: `dt.einsum`'s cached plans)."""
        out = cls()
        for var, t in items:
            if tuple(t.shape) != tuple(var.shape) or t.dtype != var.dtype or t.format != var.format:
                raise NotationError(f"expected a tensor of shape {var.shape_text()}, dtype {var.dtype} and format "
                                    f"{var.format} for {var.name}, but found {t!r}")
            out._by_uid[var.uid] = t
        return out

    def tensor(self, var: TensorVar) -> TensorBase:
        """The user's tensor of `var` (a `NotationError` for a var without one)."""
        t = self._by_uid.get(var.uid)
        if t is None:
            raise NotationError(f"expected a tensor bound to {var.name}, but found none (a workspace?)")
        return t

    def get_tensor(self, var: TensorVar) -> TensorBase | None:
        """The user's tensor of `var`, or None (a workspace)."""
        return self._by_uid.get(var.uid)

    def current(self, var: TensorVar) -> TensorVar:
        """`var` refreshed to its tensor's current var (itself when unbound or unchanged)."""
        t = self._by_uid.get(var.uid)
        return var if t is None else t.var

    def merged(self, other: Bindings) -> Bindings:
        out = Bindings()
        out._by_uid = {**self._by_uid, **other._by_uid}
        return out

    def __getitem__(self, uid: int) -> TensorBase:
        return self._by_uid[uid]

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_uid)

    def __len__(self) -> int:
        return len(self._by_uid)

    def __repr__(self) -> str:
        return "Bindings(" + ", ".join(f"{t.name}#{u}" for u, t in self._by_uid.items()) + ")"
