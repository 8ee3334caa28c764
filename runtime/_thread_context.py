"""Legate's top-level context on any Python thread: binding Legion's implicit context to the calling thread.

Legate runs its program as Legion's implicit top-level task, whose context
is a thread-local of the thread that started Legate: every Legion call
checks that the context it is given is the calling thread's
(`ctx != implicit_context` raises "Invalid task context passed to runtime
call"), and so a launch, a new store, or a store freed on another thread
aborted the process. Legion lets an external thread take the context
(`Runtime::bind_implicit_task_to_external_thread`, the call Triton's Legion
backend makes around each request); legate's Python API does not expose
it, so this module calls it in `liblegion` through ctypes.

The caller (`distal.api._threads`) holds one lock around every call that
touches Legate, so one thread at a time uses the context. A thread keeps
the context once bound (it is not unbound after the call): a store dropped
later on that thread, by reference count or by the cyclic collector, calls
Legion from there. A thread about to free stores without a call (a tensor
dropped there: `bind_context_quietly`; a collection there: a `gc.callbacks`
hook) takes it first. The thread that runs Python's exit takes the
context before legate's own clean-up (registered earlier, so run later),
which otherwise ran Legate's shutdown on a thread without a context and
crashed.

Nothing here imports legate: it reads the context only once legate's module
is loaded (Legate running), and says so when it cannot.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import os
import sys
import threading
from typing import Any

from distal.errors import DistalError

__all__ = [
    "adopt_context",
    "bind_context_quietly",
    "capture_context",
    "context_known",
    "legate_loaded",
    "legate_ranks",
    "release_at_exit",
]

_LIBRARY = "liblegion-legate.so.1"
# Legion's C++ entry points (mangled names, liblegion of the legate wheel)
_GET_CONTEXT = "_ZN6Legion7Runtime11get_contextEv"
_GET_RUNTIME = "_ZN6Legion7Runtime11get_runtimeEN5Realm9ProcessorE"
_BIND = "_ZN6Legion7Runtime37bind_implicit_task_to_external_threadEPNS_8Internal11TaskContextE"


class _Legion:
    """The three Legion calls, loaded from the running legate's library."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        self.get_context = lib[_GET_CONTEXT]
        self.get_context.restype = ctypes.c_void_p
        self.get_context.argtypes = []
        get_runtime = lib[_GET_RUNTIME]
        get_runtime.restype = ctypes.c_void_p
        get_runtime.argtypes = [ctypes.c_uint64]  # Realm::Processor, passed as its id (0: no processor)
        self.runtime = get_runtime(0)
        self.bind = lib[_BIND]
        self.bind.restype = None
        self.bind.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


_legion: _Legion | None = None
_missing: str | None = None  # why Legion's calls could not be loaded
_context: int | None = None  # Legion's top-level context (a pointer), once seen on a thread holding it
_guard = threading.Lock()
_exiting = False  # set at exit, once the exiting thread holds the context
_held = threading.local()  # .context: whether this thread is known to hold the context


def legate_loaded() -> bool:
    """Whether Legate runs in this process (its core module is loaded: importing it started Legate)."""
    return "legate.core" in sys.modules


def _load() -> _Legion | None:
    """Legion's calls, from the library legate loaded (by its name, else beside legate's package); None, with
    the reason kept in `_missing`, where neither has them (another build of legate)."""
    global _legion, _missing
    if _legion is None and _missing is None:
        core = sys.modules["legate.core"]
        beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(str(core.__file__)))), "lib64", _LIBRARY)
        for where in (_LIBRARY, beside):
            try:
                _legion = _Legion(where)
                break
            except (OSError, AttributeError) as error:
                _missing = f"{where}: {error}"
        else:
            return None
        _missing = None
    return _legion


def _in_task() -> bool:
    """Whether this thread runs a Legate task (its own context; never bind the top-level one there)."""
    core: Any = sys.modules["legate.core"]
    return bool(core.is_running_in_task())


def context_known() -> bool:
    """Whether the top-level context has been seen (on the thread that started Legate)."""
    return _context is not None


def capture_context() -> None:
    """Remember the top-level context if this thread holds it (call after Legate started on it); then bind it
    at exit and in the cyclic collector's thread. Cheap when already known or Legate is not running."""
    global _context
    if _context is not None or not legate_loaded():
        return
    legion = _load()
    current = legion.get_context() if legion is not None else None
    if current and not _in_task():
        with _guard:
            if _context is None:
                _context = int(current)
                atexit.register(release_at_exit)  # after legate's own clean-up: LIFO, so it runs first
                gc.callbacks.append(_collecting)


def adopt_context(first: bool) -> None:
    """Give this thread Legion's top-level context, if Legate runs and the thread does not hold it yet.

    `first`: whether this thread is the first that used distal's Legate work (it holds the context, or Legate
    started outside distal). Raises DistalError, before anything is queued, when Legate was started outside
    distal on another thread (by cuPyNumeric, say) and its context has not been seen yet, or when Legion's
    calls cannot be found and this is not the first thread.
    """
    if getattr(_held, "context", False) or not legate_loaded():
        return
    capture_context()
    legion = _load()
    if legion is None:
        if first:
            return
        raise DistalError(
            f"expected Legion's context calls to run distal from thread {threading.current_thread().name!r} (the "
            f"first thread that used distal runs it), but found none ({_missing}); call distal from the first thread"
        )
    if legion.get_context():
        _held.context = True  # kept: distal never unbinds it
        return
    if _context is None:
        raise DistalError(
            f"expected Legate started by distal or on this thread, but found it started on another thread "
            f"(by cuPyNumeric or legate itself, before distal ran) while this is thread "
            f"{threading.current_thread().name!r}; call distal once from the thread that started Legate (the "
            f"main thread, usually) and then any thread may call it"
        )
    legion.bind(legion.runtime, _context)
    _held.context = True


def bind_context_quietly() -> bool:
    """Bind the context to this thread where that is allowed and needed (a tensor about to free its stores);
    never raises. Returns whether this thread now holds the top-level context: False in a Legate task's thread
    (it has its task's), once the process is exiting, and while Legate does not run or its context is unseen.
    """
    if _context is None or _legion is None or _exiting:
        return False
    if getattr(_held, "context", False):
        return True
    if _in_task():
        return False
    current = _legion.get_context()
    if not current:
        _legion.bind(_legion.runtime, _context)
    elif current != _context:
        return False
    _held.context = True
    return True


def _collecting(phase: str, info: dict[str, Any]) -> None:
    """gc callback: a collection may free Legate stores, and Legion takes them only from a thread holding the
    context; the collecting thread gets it first (Legate task threads excepted: distal pauses collection while
    its tasks are queued)."""
    if phase == "start":
        bind_context_quietly()


def release_at_exit() -> None:
    """At exit, before legate's clean-up: that clean-up finishes Legate from this thread, so it takes the context.

    The collector's hook goes too: the collections of the interpreter's own teardown come after Legate has
    finished, when asking Legate anything crashes.
    """
    global _exiting
    bind_context_quietly()
    _exiting = True
    if _collecting in gc.callbacks:
        gc.callbacks.remove(_collecting)


def legate_ranks() -> int:
    """How many ranks (processes) Legate runs on; 1 when Legate is not running (counted once)."""
    global _ranks
    if not legate_loaded():
        return 1
    if _ranks is None:  # Legate's own count (as `rank_count` reads it), without going through a start
        core: Any = sys.modules["legate.core"]
        _ranks = int(core.get_legate_runtime().node_count)
    return _ranks


_ranks: int | None = None
