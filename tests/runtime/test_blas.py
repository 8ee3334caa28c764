"""BLAS runs one thread per Legate processor unless the user says otherwise."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from distal.runtime._blas import _loaded_openblas, limit_blas_threads

GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def test_loaded_openblas_is_set_to_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    assert np.ones(1).sum() == 1.0
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert limit_blas_threads(1)
    libraries = _loaded_openblas()
    if not libraries:
        pytest.skip("NumPy is not linked with OpenBLAS here")
    # NumPy's OpenBLAS and the one cupynumeric brings may both be loaded; every
    # one that reports its thread count must report one thread.
    counts = {}
    for path in libraries:
        library = ctypes.CDLL(path)
        for name in GETTERS:
            getter = getattr(library, name, None)
            if getter is not None:
                counts[path] = getter()
                break
    assert counts, f"no loaded OpenBLAS reports its thread count: {libraries}"
    assert set(counts.values()) == {1}, counts


def test_the_users_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert not limit_blas_threads(1)
