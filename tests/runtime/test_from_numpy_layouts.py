"""Arrays NumPy accepts that Legate cannot attach as they are: copied first, the values kept."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from distal import runtime as rt
from distal.runtime._make import _attachable

BASE = np.arange(24, dtype=np.float64).reshape(4, 6) * 0.5 - 3


def _unaligned() -> np.ndarray:
    raw = np.zeros(BASE.nbytes + 1, dtype=np.uint8)[1:]
    out = raw.view(np.float64).reshape(BASE.shape)
    out[...] = BASE
    assert not out.flags.aligned
    return out


LAYOUTS: dict[str, Callable[[], np.ndarray]] = {
    "big-endian": lambda: BASE.astype(">f8"),
    "unaligned": _unaligned,
    "fortran": lambda: np.asfortranarray(BASE),
    "negative strides": lambda: BASE[::-1, ::-1].copy()[::-1, ::-1],
    "read-only": lambda: np.frombuffer(BASE.tobytes(), dtype=np.float64).reshape(BASE.shape),
    "big-endian int32": lambda: BASE.astype(np.int32).astype(">i4"),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_what_is_attached_is_native_aligned_and_c_ordered(name: str) -> None:
    array = LAYOUTS[name]()
    attached = _attachable(array)
    assert attached.flags.c_contiguous and attached.flags.aligned and attached.dtype.isnative
    assert np.array_equal(attached, array)


def test_an_attachable_array_is_not_copied() -> None:
    assert _attachable(BASE) is BASE
    assert _attachable([[1.0, 2.0]]).dtype == np.float64


@pytest.mark.legate
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_from_numpy_keeps_the_values(machine: rt.MachineInfo, name: str) -> None:
    array = LAYOUTS[name]()
    back = rt.to_numpy(rt.from_numpy(array))
    assert back.dtype == array.dtype.newbyteorder("=")
    assert np.array_equal(back, array)
