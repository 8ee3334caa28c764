"""The NVIDIA driver, real or stand-in, that Legate's libraries need to load.

Every native library of the legate and cupynumeric wheels depends on
`libcuda.so.1`. Where a real driver loads, distal uses it and counts its
devices. Where none does, distal compiles `cuda_shim.c` (a library with that
SONAME that reports "no device") into a per-user cache and loads it into the
process with RTLD_GLOBAL, so the dependency is satisfied before legate is
imported. The shim is never loaded where a real driver exists.

A library loaded into every process (and every rank) must be one that only
this user could have written: the cache directory is made 0700 where it is
missing (`private_dir`) and refused, with a `DistalError`, where another user
owns it (another user who made `$TMPDIR/distal-<uid>` first could otherwise
have their library loaded); a directory of the user's own that group or
others may write is closed to them first. A cached library is loaded only if
it is a regular file of the user's that group and others cannot write
(`trusted_file`); any other is removed and built again.

The stand-in may also be found as `libcuda.so.1` on the loader's path (the
multi-rank environment, tools/multirank_env.sh, links it there so that the
ranks' processes find it before Python runs): `load_driver` recognises it by
the text it gives for "no device", and treats it as the stand-in.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

from distal import host
from distal.errors import DistalError, RuntimeFailure
from distal.host import trusted_file

__all__ = ["DriverInfo", "build_shim", "driver_listed", "is_stand_in", "load_driver", "private_dir", "shim_source",
           "trusted_file"]

_SONAME = "libcuda.so.1"
# -Bsymbolic: the shim's own lookups bind to its own functions.
_FLAGS = ("-shared", "-fPIC", "-O2", f"-Wl,-soname,{_SONAME}", "-Wl,-Bsymbolic")


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """What `load_driver` found: a real driver (with its device count) or the shim."""

    real: bool
    devices: int
    path: str


_loaded: DriverInfo | None = None


def shim_source() -> Path:
    """The path of the C source of the driver stand-in."""
    return Path(__file__).with_name("cuda_shim.c")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "distal"


def private_dir(path: Path) -> Path:
    """`path` (distal's cache directory) as a directory only this user can write (`distal.host.private_dir`)."""
    return host.private_dir(path, "distal's cache directory", "distal loads a library from it into every process "
                            "and will not load one that another user could have written", "XDG_CACHE_HOME")


def _compiler() -> str | None:
    import shutil

    wanted = os.environ.get("CC") or "cc"
    found = shutil.which(wanted)
    if found is None and "CC" not in os.environ:
        found = shutil.which("gcc") or shutil.which("clang")
    return found


def build_shim(cache_dir: Path | None = None) -> Path:
    """Compile the driver stand-in once per source version and return its path.

    The library is cached under `cache_dir` (default `$XDG_CACHE_HOME/distal`
    or `~/.cache/distal`, else `$TMPDIR/distal-<uid>` where that cannot be
    made) with a name keyed by a hash of the source and the
    compiler flags, so an edited source is rebuilt. The build writes a temporary file and renames
    it, so concurrent builders never load a half-written library. The
    directory must be the user's own (`private_dir`, else `DistalError`),
    and a cached library that is not `trusted_file` is built again.
    """
    import hashlib

    source = shim_source()
    key = hashlib.sha256(source.read_bytes() + " ".join(_FLAGS).encode()).hexdigest()[:16]
    import subprocess
    import tempfile

    where = cache_dir if cache_dir is not None else _cache_dir()
    try:
        private_dir(where)
    except OSError:
        if cache_dir is not None:
            raise
        return build_shim(Path(tempfile.gettempdir()) / f"distal-{os.getuid()}")
    target = where / f"libcuda-shim-{key}.so"
    if trusted_file(target):
        return target
    compiler = _compiler()
    if compiler is None:
        raise DistalError(
            "no NVIDIA driver (libcuda.so.1) could be loaded and no C compiler was found "
            "to build distal's CPU-only stand-in for it; install a C compiler "
            "(e.g. `apt-get install gcc`, or set CC) or the NVIDIA driver"
        )
    fd, tmp = tempfile.mkstemp(prefix=".libcuda-shim-", suffix=".so", dir=where)
    os.close(fd)
    command = [compiler, *_FLAGS, "-o", tmp, str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeFailure(
                f"building the driver stand-in failed ({' '.join(command)}):\n{done.stderr}"
            )
        os.chmod(tmp, 0o755)  # whatever the umask: group and others may not write it
        os.replace(tmp, target)  # replaces an untrusted file of that name (the directory is the user's)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def driver_listed() -> bool:
    """Whether the dynamic loader can find a `libcuda.so.1`, judged without loading it.

    Looks in LD_LIBRARY_PATH and the loader's cache (/etc/ld.so.cache). Used at
    `import distal`, where loading a real driver would cost time for nothing.
    """
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if folder and os.path.exists(os.path.join(folder, _SONAME)):
            return True
    try:
        return _SONAME.encode() in Path("/etc/ld.so.cache").read_bytes()
    except OSError:
        return False


def _count_devices(driver: ctypes.CDLL) -> int:
    if driver.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


_STAND_IN_TEXT = b"(distal driver shim)"  # cuda_shim.c's text for CUDA_ERROR_NO_DEVICE ends so
_NO_DEVICE = 100  # CUDA_ERROR_NO_DEVICE


def is_stand_in(driver: ctypes.CDLL) -> bool:
    """Whether the loaded `libcuda.so.1` is distal's stand-in (its text for "no device" says so)."""
    text = ctypes.c_char_p()
    try:
        get_text = driver.cuGetErrorString
    except AttributeError:
        return False
    get_text.restype = ctypes.c_int
    get_text.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    return get_text(_NO_DEVICE, ctypes.byref(text)) == 0 and (text.value or b"").endswith(_STAND_IN_TEXT)


def load_driver() -> DriverInfo:
    """Make `libcuda.so.1` resolvable in this process; idempotent.

    Tries the real driver first. Only when it cannot be loaded is the
    stand-in built (if needed) and loaded with RTLD_GLOBAL.
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        real = ctypes.CDLL(_SONAME)
    except OSError:
        real = None
    if real is not None and is_stand_in(real):  # distal's own, found on the loader's path
        _loaded = DriverInfo(real=False, devices=0, path=_SONAME)
        return _loaded
    if real is not None:
        _loaded = DriverInfo(real=True, devices=_count_devices(real), path=_SONAME)
        return _loaded
    path = build_shim()
    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    _loaded = DriverInfo(real=False, devices=0, path=str(path))
    return _loaded
