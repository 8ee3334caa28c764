"""The driver stand-in: built per source hash, answers "no device"."""

from __future__ import annotations

import ctypes
import os
import stat
import tempfile
from pathlib import Path

import pytest

from distal.errors import DistalError
from distal.runtime import build_shim, load_driver
from distal.runtime._shim import private_dir, shim_source, trusted_file

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


# -- only a directory and a library of the user's own are loaded (issue 32 item 8) ------------------------------

OTHER_UID = 65534  # "nobody"


def _as_another_user(path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("making a file another user owns needs root")
    os.chown(path, OTHER_UID, OTHER_UID)


def _key_name(tmp_path: Path) -> str:
    return build_shim(tmp_path / "reference").name  # the cached library's name for this source and flags


def test_a_directory_another_user_made_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o755)
    _as_another_user(planted)
    with pytest.raises(DistalError, match=rf"{planted}.*owned by uid {OTHER_UID}"):
        build_shim(planted)


def test_the_tmpdir_fallback_refuses_a_planted_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home cache that cannot be made sends distal to $TMPDIR/distal-<uid>: another user may have made it first."""
    blocked = tmp_path / "home-cache"
    blocked.write_text("a file where the cache directory would go")  # mkdir under it fails, as on a read-only home
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir(mode=0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    fallback = shared_tmp / f"distal-{os.getuid()}"
    made = build_shim()
    assert made.parent == fallback and stat.S_IMODE(fallback.stat().st_mode) == 0o700
    made.unlink()
    fallback.rmdir()
    fallback.mkdir(mode=0o777)
    _as_another_user(fallback)
    with pytest.raises(DistalError, match="owned by uid"):
        build_shim()


def test_something_other_than_a_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    assert private_dir(link) == link  # a link to a directory of one's own is that directory
    other = tmp_path / "file"
    other.write_text("")
    with pytest.raises((DistalError, OSError)):
        private_dir(other)


def test_a_writable_directory_of_ones_own_is_closed_to_others(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o777)
    build_shim(mine)
    assert stat.S_IMODE(mine.stat().st_mode) == 0o755


@pytest.mark.parametrize("plant", ["group-writable", "link", "another user's"])
def test_an_untrusted_cached_library_is_built_again(tmp_path: Path, plant: str) -> None:
    name = _key_name(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    planted = cache / name
    evil = tmp_path / "evil.so"
    evil.write_bytes(b"not the stand-in")
    if plant == "link":
        planted.symlink_to(evil)
    else:
        planted.write_bytes(b"not the stand-in")
        os.chmod(planted, 0o777)
        if plant == "another user's":
            os.chmod(planted, 0o755)
            _as_another_user(planted)
    assert not trusted_file(planted)
    built = build_shim(cache)
    assert built == planted and trusted_file(built)
    assert built.read_bytes().startswith(b"\x7fELF") and evil.read_bytes() == b"not the stand-in"
    assert build_shim(cache).stat().st_mtime_ns == built.stat().st_mtime_ns  # trusted now: kept


# -- the stand-in found on the loader's path is still the stand-in (the multi-rank environment) ------------------

def test_the_stand_in_is_recognised_and_a_driver_without_its_text_is_not(shim: ctypes.CDLL) -> None:
    from distal.runtime._shim import is_stand_in

    assert is_stand_in(shim)
    assert not is_stand_in(ctypes.CDLL("libm.so.6"))  # a library without cuGetErrorString


def test_a_stand_in_on_ld_library_path_is_loaded_as_the_stand_in(tmp_path: Path) -> None:
    """tools/multirank_env.sh links the stand-in as libcuda.so.1 on LD_LIBRARY_PATH: distal must treat it as the
    stand-in (no automatic configuration, Realm's GPU logger silenced in the user's LEGATE_CONFIG), as it does
    one it loads itself; on legate 26.1 the "no device" lines were printed on stdout."""
    import subprocess
    import sys

    folder = tmp_path / "driver"
    folder.mkdir()
    (folder / "libcuda.so.1").symlink_to(build_shim(tmp_path / "cache"))
    code = ("import os; from distal.runtime import _start; config, _, driver = _start.prepare_process(); "
            "print(driver, config, os.environ['LEGATE_AUTO_CONFIG'])")
    env = {**os.environ, "LD_LIBRARY_PATH": str(folder), "LEGATE_CONFIG": "--cpus 1 --sysmem 300"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "shim --cpus 1 --sysmem 300 --logging gpu=none 0"
