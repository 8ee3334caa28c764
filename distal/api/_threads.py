"""Any Python thread may call distal: one thread at a time on Legate, with Legate's context bound to it.

Legate runs its program as one top-level task whose context belongs to
one thread at a time, and Legion aborts the process when another thread
launches, makes or frees a store. Every entry point of the api layer that
can touch Legate (`dt.einsum`, `Plan.run`, `Schedule.evaluate`,
`Tensor.from_array`, `to_numpy`, `place`, `redistribute`, ...) runs inside
`legate_section()`:

- the calling thread takes distal's one re-entrant lock (threads calling
  at once wait their turn; a section inside a section is free);
- Legate's context is bound to it (`distal.runtime.adopt_context`) when
  Legate runs, and it keeps it, so that stores it drops later are freed
  from a thread holding the context; a DistalError says so before anything
  is queued when that cannot be done (Legate started outside distal on
  another thread, and not yet seen by distal);
- with several ranks, only the first thread that used distal's Legate work
  may call: ranks run the same program and must issue the same launches in
  the same order, which threads interleaving differently on each rank would
  break (a hang); another thread's call raises DistalError before anything
  is queued.

>>> with legate_section():
...     pass
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Callable

from distal import runtime
from distal.errors import DistalError

__all__ = ["free_here", "legate_section"]

_lock = threading.RLock()
_inside = threading.local()  # .depth: sections open on this thread
_first: int | None = None  # the first thread (ident) whose section ran with Legate running

def _check_ranks(me: int) -> None:
    """With several ranks, only the first thread that used Legate through distal may call."""
    if _first is None or _first == me or not runtime.legate_loaded():
        return
    ranks = runtime.legate_ranks()
    if ranks > 1:
        raise DistalError(
            f"expected distal called from one thread when Legate runs {ranks} ranks, but found a call from "
            f"thread {threading.current_thread().name!r} after another thread used it (the ranks must issue "
            "the same launches in the same order, which threads interleaving differently would break); call "
            "distal from that first thread"
        )


class _Section:
    """The context manager `legate_section()` returns (one object: its state is per thread)."""

    __slots__ = ()

    def __enter__(self) -> None:
        depth = getattr(_inside, "depth", 0)
        if depth:  # a section inside a section: this thread has its turn already
            _inside.depth = depth + 1
            return
        me = threading.get_ident()
        _check_ranks(me)
        _lock.acquire()
        try:
            _check_ranks(me)
            runtime.adopt_context(_first is None or _first == me)
        except BaseException:
            _lock.release()
            raise
        _inside.depth = 1

    def __exit__(self, *exc: object) -> None:
        global _first
        depth = _inside.depth - 1
        _inside.depth = depth
        if depth:
            return
        try:
            runtime.capture_context()  # Legate may have started in the body, on this thread
            if _first is None and runtime.legate_loaded():
                _first = threading.get_ident()
                # registered after legate's clean-up and the runtime's own exit hook: run before both
                atexit.register(_close)
        finally:
            _lock.release()


_SECTION = _Section()


def legate_section() -> _Section:
    """Run the body of `with legate_section():` as the one thread on Legate: take the lock, bind Legate's
    context to this thread.

    Raises DistalError before the body runs when this thread cannot use Legate (see the module docstring).
    """
    return _SECTION


EXIT_WAIT_S = 60.0  # how long the exit waits for a call in progress on another thread


def _close() -> None:
    """At exit, before Legate's clean-up: take the turn for good, so that a call a daemon thread is making ends
    first (within `EXIT_WAIT_S`) and none starts after Legate has finished (a daemon thread waiting for the turn
    is stopped by the exit)."""
    _lock.acquire(timeout=EXIT_WAIT_S)


def free_here(drop: Callable[[], None]) -> None:
    """Run `drop`, which lets go of Legate stores, as this thread may free them: with Legate's context bound to
    it, and in its turn (no other thread is inside Legate while Legion frees them; it waits for the turn, at most
    `EXIT_WAIT_S`). Where the thread cannot hold the context (a Legate task's thread, the exit, Legate not
    running), or it has its turn already, `drop` runs as it is. Never raises: a tensor collected while the
    interpreter shuts down (its import machinery gone) lets go as it is, without a word on stderr."""
    if sys.is_finalizing():
        drop()
        return
    try:
        holds = runtime.bind_context_quietly()
    except ImportError:  # the interpreter is shutting down ("sys.meta_path is None")
        drop()
        return
    depth: int = getattr(_inside, "depth", 0)
    if not holds or depth:
        drop()
        return
    turn = _lock.acquire(timeout=EXIT_WAIT_S)
    try:
        drop()
    finally:
        if turn:
            _lock.release()
