"""A tensor called as a temporary (`dt.einsum(...).to_numpy()`) hands over its host array instead of a copy.

CPython counts references: at the top of a method called on an object that
nothing else holds, the object has as many as `_Probe().refs()` finds for
a temporary here (the caller's stack, the method's frame, getrefcount's
argument). Such a tensor goes away when the call returns, so its own array
(an eager run's result) may be given out as it is, as NumPy elides its
temporaries' copies; `dt.Tensor.to_numpy` asks `is_temporary` first thing.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from distal.notation.storage import HostStorage

__all__ = ["handed_over", "is_temporary"]


class _Probe:
    def refs(self) -> int:
        return sys.getrefcount(self)


# references a temporary has as `self` at the top of a method called on it (`_Probe().refs()`: the caller's
# stack, this frame, getrefcount's argument), counted once by this interpreter
_TEMPORARY_REFS = _Probe().refs()


def handed_over(storage: Any) -> np.ndarray | None:
    """The host array of `storage` if it may be handed over instead of copied: a `HostStorage` only the tensor
    holds, of an array that owns its writeable memory and that nothing else references (an eager run's result;
    never a view of the user's own data); None otherwise."""
    if type(storage) is not HostStorage or sys.getrefcount(storage) > 3:  # the tensor, `storage`, the argument
        return None
    data = storage.held()
    if data.base is not None or not data.flags.owndata or not data.flags.writeable or sys.getrefcount(data) > 3:
        return None  # held by the storage, `data` and the argument only
    return data


def is_temporary(obj: Any) -> bool:
    """Whether `obj`, the `self` of the method that calls this first thing, is held by nothing else (one more
    reference than `_Probe().refs()` counts: this function's argument)."""
    return sys.getrefcount(obj) <= _TEMPORARY_REFS + 1
