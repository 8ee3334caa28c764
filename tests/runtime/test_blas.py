"""BLAS runs one thread per Legate processor unless the user says otherwise."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from distal.runtime._blas import _loaded_openblas, limit_blas_threads


def test_loaded_openblas_is_set_to_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    assert np.ones(1).sum() == 1.0
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert limit_blas_threads(1)
    libraries = _loaded_openblas()
    if not libraries:
        pytest.skip("NumPy is not linked with OpenBLAS here")
    library = ctypes.CDLL(libraries[0])
    getter = getattr(library, "scipy_openblas_get_num_threads64_", None)
    if getter is None:
        pytest.skip("this OpenBLAS does not report its thread count")
    assert getter() == 1


def test_the_users_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert not limit_blas_threads(1)
