"""Kernels callable from distal's generic Legate task, and their failures.

A kernel is a Python callable `kernel(point, *tiles) -> None`: `point` is the
launch point (a tuple of ints), `tiles` are NumPy views of the local tiles of
the launch's arguments, in the order the launch lists them. The task looks
kernels up by the integer key `register_kernel` hands out, so the key is
the only thing a launch has to carry.

An exception raised inside a Legate task aborts the process, so the generic
task catches it, records it here, and the next synchronising call of distal
(`to_numpy`, `fence`) raises it as a `RuntimeFailure`. With one rank the
tasks run in this process, which is what makes that record visible.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from distal.errors import RuntimeFailure

__all__ = ["Kernel", "KernelFailure", "check_failures", "is_transient", "kernel", "record_failure",
           "register_kernel"]

Kernel = Callable[..., None]


@dataclass(frozen=True, slots=True)
class KernelFailure:
    """An exception a kernel raised at one launch point."""

    name: str
    point: tuple[int, ...]
    trace: str


_lock = threading.Lock()
_kernels: list[tuple[str, Kernel | None]] = []
_keys: dict[int, int] = {}
_transient: list[int] = []
_failures: list[KernelFailure] = []


def register_kernel(fn: Kernel, name: str | None = None, *, transient: bool = False) -> int:
    """Make `fn(point, *tiles)` callable from Legate tasks and return its key.

    Registering the same function object again returns the same key. A
    `transient` kernel (a compiled plan's task body, which holds the plan's
    tensors and so their data) is released at the next blocking fence, when
    no queued task can still call it; registering it again after that gives
    a new key.

    >>> key = register_kernel(lambda point, out: None, "noop")
    >>> kernel(key)[0]
    'noop'
    """
    with _lock:
        known = _keys.get(id(fn))
        if known is not None and _kernels[known][1] is fn:
            return known
        key = len(_kernels)
        label = name if name is not None else str(getattr(fn, "__name__", "kernel"))
        _kernels.append((label, fn))
        _keys[id(fn)] = key
        if transient:
            _transient.append(key)
        return key


def is_transient(key: int) -> bool:
    """Whether kernel `key` was registered `transient` (and is not released yet)."""
    with _lock:
        return key in _transient


def release_transient() -> int:
    """Drop every transient kernel (call only when no launch is queued); returns how many."""
    with _lock:
        for key in _transient:
            label, fn = _kernels[key]
            if fn is not None and _keys.get(id(fn)) == key:
                del _keys[id(fn)]
            _kernels[key] = (label, None)
        count = len(_transient)
        _transient.clear()
        return count


def kernel(key: int) -> tuple[str, Kernel]:
    """The name and callable registered under `key`."""
    label, fn = _kernels[key]
    if fn is None:
        raise RuntimeFailure(f"kernel {label} (key {key}) was released at a fence before its task ran")
    return label, fn


def record_failure(key: int, point: tuple[int, ...], error: BaseException) -> None:
    """Remember that kernel `key` raised `error` at `point` (called inside tasks)."""
    name = _kernels[key][0] if 0 <= key < len(_kernels) else f"#{key}"
    trace = "".join(traceback.format_exception(error))
    with _lock:
        _failures.append(KernelFailure(name, point, trace))


def check_failures() -> None:
    """Raise a `RuntimeFailure` for kernels that failed since the last check."""
    with _lock:
        failed = list(_failures)
        _failures.clear()
    if failed:
        first = failed[0]
        raise RuntimeFailure(
            f"kernel {first.name!r} failed at launch point {first.point} "
            f"({len(failed)} failure(s) in all):\n{first.trace}"
        )

