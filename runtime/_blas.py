"""One BLAS thread per Legate processor, only while distal's work is queued.

With one rank, Legate runs Python tasks on its CPU processor threads inside
this very process, so every processor calling a multi-threaded BLAS would
oversubscribe the cores. From distal's first launch until the next blocking
fence (`_start.work_queued`/`work_done`), every BLAS library loaded in the
process (OpenBLAS, MKL, BLIS: threadpoolctl finds them; distal's own
OpenBLAS for tiles, `distal.tile_blas`, is loaded first) is limited to
`task_threads()` threads; at the fence each gets back the thread count it had.
Both happen on the main thread: OpenBLAS ignores a thread count set from
another thread (measured with Legate's task threads). The setting is
process-wide while it holds, so a NumPy call of the user's own made while
distal's tasks are queued also runs on one thread; no environment variable
is set.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["blas_info", "blas_user_threads", "limit", "restore", "set_task_threads", "task_threads"]

_lock = threading.Lock()
_threads: int | None = 1
_saved: list[tuple[Any, int]] | None = None
_controller: Any = None


def set_task_threads(threads: int | None) -> None:
    """BLAS threads while distal's tasks run (default 1); None leaves BLAS alone."""
    global _threads
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        from distal.errors import DistalError

        raise DistalError(f"expected a positive number of BLAS threads per task or None, but found {threads!r}")
    _threads = threads


def task_threads() -> int | None:
    """The BLAS thread count distal's tasks run with (None: not limited)."""
    return _threads


_modules_seen = -1


def _blas_libraries(refresh: bool = False) -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries loaded in this process.

    Looked up again whenever Python modules were imported since the last look
    (an import such as cupynumeric's or scipy's can load another BLAS); a look
    costs about a millisecond, the check a `len(sys.modules)`.
    """
    global _controller, _modules_seen
    if _controller is None or refresh or len(sys.modules) != _modules_seen:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
        _modules_seen = len(sys.modules)
    return [lib for lib in _controller.lib_controllers if lib.user_api == "blas"]


def blas_info() -> list[dict[str, Any]]:
    """Each loaded BLAS library: its internal API (openblas, mkl, blis), path and current thread count."""
    return [{"internal_api": lib.internal_api, "filepath": lib.filepath, "num_threads": lib.num_threads}
            for lib in _blas_libraries(refresh=True)]


def blas_user_threads() -> int:
    """NumPy's BLAS thread count outside distal's limit: while `limit()` holds, the count `restore()` gives back
    (the largest saved of the libraries it limited); otherwise the largest count of the loaded BLAS libraries
    now (1 where none is found). Steady while distal's tasks are queued, unlike the count of the moment."""
    with _lock:
        if _saved:
            return max(before for _, before in _saved)
    return max((lib.num_threads for lib in _blas_libraries()), default=1)


def prepare() -> None:
    """Load distal's own OpenBLAS for tiles where it is chosen (`distal.tile_blas`), then find every BLAS
    library loaded so far (when Legate starts, on the main thread, before any task runs)."""
    from distal.tile_blas import library

    library()
    _blas_libraries(refresh=True)


def limit() -> None:
    """Limit every loaded BLAS to `task_threads()` threads, remembering each one's count; idempotent."""
    global _saved
    with _lock:
        if _saved is not None or _threads is None:
            return
        _saved = []
        for lib in _blas_libraries():
            before = lib.num_threads
            if before != _threads:
                lib.set_num_threads(_threads)
                _saved.append((lib, before))


def restore() -> None:
    """Give every BLAS limited by `limit` its thread count back."""
    global _saved
    with _lock:
        for lib, before in _saved or ():
            lib.set_num_threads(before)
        _saved = None
