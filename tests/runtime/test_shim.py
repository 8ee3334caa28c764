"""The driver stand-in: built per source hash, answers "no device"."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from distal.errors import DistalError
from distal.runtime import build_shim, load_driver
from distal.runtime._shim import shim_source

CUDA_ERROR_NO_DEVICE = 100


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    path = build_shim(tmp_path_factory.mktemp("shim"))
    return ctypes.CDLL(str(path))


def test_build_is_cached_by_source_hash(tmp_path: Path) -> None:
    first = build_shim(tmp_path)
    stamp = first.stat().st_mtime_ns
    again = build_shim(tmp_path)
    assert again == first and again.stat().st_mtime_ns == stamp
    assert first.name.startswith("libcuda-shim-") and first.suffix == ".so"
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary left


def test_soname_is_the_driver_name(tmp_path: Path) -> None:
    data = build_shim(tmp_path).read_bytes()
    assert b"libcuda.so.1" in data


def test_no_compiler_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    with pytest.raises(DistalError, match="install a C compiler"):
        build_shim(tmp_path)


def test_calls_report_no_device(shim: ctypes.CDLL) -> None:
    assert shim.cuInit(0) == CUDA_ERROR_NO_DEVICE
    count = ctypes.c_int(-1)
    assert shim.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value == 0
    version = ctypes.c_int(0)
    assert shim.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value > 0
    name = ctypes.c_char_p()
    assert shim.cuGetErrorName(CUDA_ERROR_NO_DEVICE, ctypes.byref(name)) == 0
    assert name.value == b"CUDA_ERROR_NO_DEVICE"
    text = ctypes.c_char_p()
    assert shim.cuGetErrorString(CUDA_ERROR_NO_DEVICE, ctypes.byref(text)) == 0
    assert text.value


@pytest.mark.parametrize("getter", ["cuGetProcAddress", "cuGetProcAddress_v2"])
def test_proc_address_is_never_null(shim: ctypes.CDLL, getter: str) -> None:
    lookup = getattr(shim, getter)
    own = ctypes.cast(shim.cuGetErrorName, ctypes.c_void_p).value
    found = ctypes.c_void_p()
    assert lookup(b"cuGetErrorName", ctypes.byref(found), 12000, ctypes.c_ulonglong(0),
                  None) == 0
    assert found.value == own
    other = ctypes.c_void_p()
    assert lookup(b"cuMemAlloc_v2", ctypes.byref(other), 12000, ctypes.c_ulonglong(0),
                  None) == 0
    assert other.value
    generic = ctypes.CFUNCTYPE(ctypes.c_int)(other.value)
    assert generic() == CUDA_ERROR_NO_DEVICE


def test_the_source_ships_with_the_package() -> None:
    assert shim_source().is_file()


def test_load_driver_is_idempotent() -> None:
    assert load_driver() is load_driver()


def test_driver_listed_looks_in_ld_library_path_without_loading(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from distal.runtime._shim import driver_listed

    (tmp_path / "libcuda.so.1").write_bytes(b"not a library")  # found by name; never loaded
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    assert driver_listed()
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "elsewhere"))
    cached = Path("/etc/ld.so.cache")
    in_cache = cached.is_file() and b"libcuda.so.1" in cached.read_bytes()
    assert driver_listed() == in_cache
