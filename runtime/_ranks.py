"""Several ranks agree: on kernel failures, on the random state and on the memory they check against.

A kernel's exception is recorded in the process whose task raised it
(`_registry.record_failure`); with several ranks the other ranks know
nothing of it. Had only that rank raised, the others would go on issuing
launches that it no longer issues, and the program would hang or end with
a wrong number. So at each point where distal reports failures (`to_numpy`,
`fence`), with more than one rank, one task pinned to a CPU of each rank
writes what its process recorded into that rank's row of a small store;
every rank reads the whole store, and if any rank recorded a failure, every
rank raises the same `RuntimeFailure`, naming the rank, the kernel, the
launch point and the trace. All ranks read the same store, so they agree
even on a failure that was still being recorded when the check ran (it is
then reported at the next check, by every rank).

With one rank this is `_registry.check_failures`. Each rank's Legate may
have been started with a little more or less memory than another's (its
defaults come from the memory free when it started); memory checks use the
smallest (`agreed_sysmem_mb`), so every rank refuses the same plans.

NumPy's and Python's global random streams are what a program draws its
data from before handing it to distal; with several ranks they must be the
same on every rank, or each rank holds different data. legate.core seeds
both with a constant when it is imported, but distal gives the user back
the streams they had (`_start._import_legate`), which differ between ranks
where the program never seeded them. So at start-up with several ranks,
every rank takes rank 0's streams (`share_random_state`): a seeded program
continues its own stream, an unseeded one gets rank 0's, and every rank
draws the same numbers.
"""

from __future__ import annotations

import random

import numpy as np

from distal.errors import RuntimeFailure

from . import _registry
from ._launch import Privilege, point_launch
from ._start import ensure_started

__all__ = ["agreed_sysmem_mb", "check_failures_everywhere", "pack_random_state", "share_random_state",
           "unpack_random_state"]

_ROW = 4096  # bytes of each rank's row in a gather (`_gather`): its text, cut to fit
_kernels: dict[str, int] = {}  # the key of each gather's kernel, by what it reports


def _failure_text() -> str:
    """This process's recorded failures (not cleared): their count, then the first one's text."""
    with _registry._lock:
        failures = list(_registry._failures)
    text = f"{len(failures)}\n"
    if failures:
        first = failures[0]
        text += f"kernel {first.name!r} failed at launch point {first.point}:\n{first.trace}"
    return text


_local_sysmem = [0]  # what this rank's Legate was started with (MiB), for `_sysmem_text`


def _sysmem_text() -> str:
    return str(_local_sysmem[0])


_REPORTS = {"failures": _failure_text, "sysmem": _sysmem_text}


def _reporter(what: str) -> int:
    """The key of the kernel that writes, into its (1, _ROW) tile, the rank it runs on and `_REPORTS[what]()`."""
    key = _kernels.get(what)
    if key is None:
        text = _REPORTS[what]

        def report(point: tuple[int, ...], row: np.ndarray) -> None:
            from legate.core import get_legate_runtime

            data = np.frombuffer(f"{get_legate_runtime().node_id} {text()}".encode()[: row.size], dtype=np.uint8)
            flat = row.reshape(-1)
            flat[...] = 0
            flat[: data.size] = data

        key = _kernels[what] = _registry.register_kernel(report, f"{what} report")
    return key


def _gather(what: str, ranks: int, cpus: int) -> list[tuple[int, str]]:
    """(rank, text) from a task on each rank running `_REPORTS[what]` in that rank's process, as every rank
    reads them. Call on every rank at the same point of the program."""
    from ._make import zeros
    from ._store import tile_of

    key = _reporter(what)
    per_rank = max(cpus // ranks, 1)
    rows = zeros((ranks, _ROW), np.uint8)  # written first: each pinned launch below reads and writes its row
    for rank in range(ranks):
        block = tile_of(rows, (1, _ROW), (rank, 0))
        point_launch(key, [(block, Privilege.WRITE)], (rank,), processor=rank * per_rank)
    found = []
    # the rows' own mapping, not `read_back` (its attach and detach cost twice as much across ranks); the
    # store is dropped after this read, so its mapping slows no later launch
    for row in np.array(np.asarray(rows.handle.get_physical_store().get_inline_allocation())):
        where, _, text = bytes(row).rstrip(b"\0").decode(errors="replace").partition(" ")
        found.append((int(where), text))
    return found


def _reports(ranks: int, cpus: int) -> list[tuple[int, int, str]]:
    """(failures, rank, first failure's text) of each rank, as every rank reads them."""
    found = []
    for rank, text in _gather("failures", ranks, cpus):
        count, _, first = text.partition("\n")
        found.append((int(count), rank, first))
    return found


def agreed_sysmem_mb(ranks: int, cpus: int, local: int) -> int:
    """The smallest system memory (MiB) any rank's Legate was started with; `local` is this rank's.

    Every rank checks memory against this one figure, so that all ranks make the same decision (each rank sized
    its own default from the memory free when it started, and a check near the limit could pass on one rank and
    refuse on another: the others would then wait for it forever)."""
    _local_sysmem[0] = local
    return min(int(text) for _, text in _gather("sysmem", ranks, cpus))


def check_failures_everywhere(ran: bool = True) -> None:
    """Raise a `RuntimeFailure` on every rank for the kernels that failed on any rank since the last check.

    Call it at the same point of the program on every rank (distal's
    `to_numpy` and `fence` do). One rank: `_registry.check_failures`. With
    several ranks, `ran=False` (distal launched nothing since the last
    check, which every rank knows alike) skips the exchange: no kernel can
    have failed since.
    """
    machine = ensure_started()
    if machine.ranks <= 1:
        _registry.check_failures()
        return
    if not ran:
        return
    reports = _reports(machine.ranks, machine.cpus)
    mine = next((count for count, rank, _ in reports if rank == machine.rank), 0)
    with _registry._lock:
        del _registry._failures[:mine]  # reported now, by every rank; later ones wait for the next check
    failed = [(count, rank, text) for count, rank, text in reports if count > 0]
    if failed:
        total = sum(count for count, _, _ in failed)
        _, rank, text = failed[0]
        where = ", ".join(str(r) for _, r, _ in failed)
        raise RuntimeFailure(
            f"a kernel failed on rank {rank} of {machine.ranks} ({total} failure(s) in all, on rank(s) {where}; "
            f"every rank raises this): {text}"
        )


def pack_random_state() -> np.ndarray:
    """NumPy's and Python's global random states as one uint64 array (`unpack_random_state` sets them)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)  # type: ignore[misc]
    assert kind == "MT19937", kind
    version, words, gauss_next = random.getstate()
    float_bits = np.array([float(gauss), float(gauss_next or 0.0)]).view(np.uint64)
    return np.concatenate([
        np.asarray(keys, dtype=np.uint64),
        np.array([pos, has_gauss, version, gauss_next is not None], dtype=np.uint64),
        float_bits,
        np.asarray(words, dtype=np.uint64),
    ])


def unpack_random_state(packed: np.ndarray) -> None:
    """Set NumPy's and Python's global random states from `pack_random_state`'s array."""
    keys = packed[:624].astype(np.uint32)
    pos, has_gauss, version, has_next = (int(x) for x in packed[624:628])
    gauss, gauss_next = (float(x) for x in packed[628:630].view(np.float64))
    words = tuple(int(x) for x in packed[630:])
    np.random.set_state(("MT19937", keys, pos, has_gauss, gauss))
    random.setstate((version, words, gauss_next if has_next else None))


def share_random_state() -> None:
    """Every rank takes one rank's (rank 0's) NumPy and Python global random states; nothing with one rank.

    Call it on every rank at the same point (distal's start-up does). Each
    rank attaches its own packed state; Legate reads an attached buffer from
    one rank (rank 0's, seen with two and three ranks), so every rank reads
    back the same state.
    """
    if ensure_started().ranks <= 1:
        return
    from ._make import from_numpy

    packed = from_numpy(pack_random_state())
    unpack_random_state(np.array(np.asarray(packed.handle.get_physical_store().get_inline_allocation())))
