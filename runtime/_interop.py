"""Arrays of other Legate libraries (cuPyNumeric, anything with ``__legate_data_interface__``) in distal's stores.

They are copied by Legate, store to store (`legate_input`): the caller's
array stays its own and nothing goes through the host. The other way, a
tensor's data handed to them, is `_tensor_data.data_interface`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from distal.errors import ShapeError

from ._copy import copy_store
from ._launch import Arg, Privilege, index_launch
from ._make import copy_kernel, zeros
from ._start import legate_runtime
from ._store import Store, legate_type, wrap

__all__ = ["legate_input"]


def legate_input(array: Any) -> tuple[Store, tuple[int, ...]] | None:
    """A `Store` distal owns holding the data of an object with ``__legate_data_interface__``, and its shape.

    The data is copied on Legate (`_copy.copy_store`), store to store, so the
    caller's array stays its own and nothing goes through the host. A 0-d
    array gives a store of shape (1,). None for any other object.
    """
    if getattr(type(array), "__legate_data_interface__", None) is None:
        return None
    data = array.__legate_data_interface__
    fields = data.get("data", {}) if isinstance(data, dict) else {}
    if data.get("version") != 1 or len(fields) != 1:
        raise ShapeError(f"expected a Legate data interface of version 1 with one field, but found {data!r}")
    (source,) = fields.values()
    handle = source.data
    kind = _numpy_dtype(source.type)
    shape = tuple(int(n) for n in handle.shape)
    if math.prod(shape) == 0:
        return zeros(shape or (1,), kind), shape  # nothing to copy (or a scalar: below)
    runtime = legate_runtime()
    own = wrap(runtime.create_store(legate_type(kind), shape or (1,)), kind)
    if shape and not handle.transformed and not handle.has_scalar_storage:
        copy_store(own.handle, handle)
    else:
        # a view (a slice, a transpose), a scalar or a one-element array held as a future (cuPyNumeric's
        # (1, 1)): Legate's copy takes none of them; one task copies it
        source = wrap(handle if shape else handle.promote(0, 1), kind)
        index_launch(copy_kernel(), (1,), [Arg(source, Privilege.READ), Arg(own, Privilege.WRITE)])
    return own, shape


def _numpy_dtype(kind: Any) -> np.dtype[Any]:
    from legate.core import types

    for name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64", "complex64", "complex128"):
        if kind == getattr(types, name):
            return np.dtype(name.rstrip("_"))
    raise ShapeError(f"expected a numeric Legate array, but found type {kind}")
