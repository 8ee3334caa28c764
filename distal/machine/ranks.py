"""The Legate ranks a run has: how many, how many share this host, their processors, the link between them.

With several Legate ranks (processes, each running the whole program) the
machine's outermost level is the ranks (docs/multinode.md): a node is a
rank. `running_ranks()` is the number of ranks this program runs as, read as
Legate's own launcher reads it (`legate.driver.args`: Open MPI's
`OMPI_COMM_WORLD_SIZE`, then `PMI_SIZE`, then MVAPICH's `MV2_COMM_WORLD_SIZE`),
so that it is known before Legate starts and is the same on every rank;
`local_ranks()` is how many of them share this host (`*_LOCAL_SIZE`).
`run_processors(kind)` counts the processors of the whole run: each rank's
configured processors (`distal.host.configured_processors`) times the
ranks. `rank_machine(ranks, per_rank)` is the machine of a run:
`Machine(Grid(ranks), Grid(per_rank))` with several ranks, one grid with one.

Legate places the points of a launch block-wise over the processors of the
run, rank 0's first (the multi-rank suite's placement check: rows 0-6 of a
13-row tensor on `Grid(2, 1)` are read on rank 0, rows 7-12 on rank 1), which
is `Machine.bind`'s order: on `rank_machine(ranks, p)` the point whose outer
coordinate is r runs on rank r.

`RANK_LINK` is the link between two ranks of this host (UCX over shared
memory), measured by `python bench/ranks.py --link --repeats 5` on a quiet
machine (record bench/results/2026-11-28_8a6cf04/ranks_link.json, load
average 0.7): Realm's own times of the copies between ranks in Legion's
profile, the fastest copy of each size. Latency: the fastest copy under
64 KiB, 5.7 ms; bandwidth: the slope of the fastest copies of 8-64 MiB,
2.17 GB/s (8.0 ms at 16 MiB, 36.3 ms at 64 MiB). Under load (average 13,
bench/results/2026-11-28_dd4b874/) the same probe gave 7.1 ms and 0.98 GB/s,
and another run 8 ms and 3.5 GB/s: the bandwidth is known to a factor of
about 2 either way, the latency better.

>>> rank_machine(2, 1), rank_machine(1, 4)
(Machine(Grid(2), Grid(1)), Machine(Grid(4)))
>>> running_ranks({"OMPI_COMM_WORLD_SIZE": "3"}), running_ranks({})
(3, 1)
>>> run_processors("cpu", {"OMPI_COMM_WORLD_SIZE": "2", "LEGATE_CONFIG": "--cpus 2"})
4
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from distal.errors import MachineError
from distal.host import configured_processors
from distal.machine.grid import Grid, Machine
from distal.machine.links import GB, Link

__all__ = ["LAUNCHER_SIZES", "RANK_LINK", "local_ranks", "rank_machine", "run_processors", "running_ranks"]

#: The launchers' variables for (all ranks, ranks on this host), in the order Legate's driver reads them.
LAUNCHER_SIZES = (("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"), ("PMI_SIZE", "PMI_LOCAL_SIZE"),
                  ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"))

#: Between two ranks of this host (UCX shared memory), measured by `python bench/ranks.py --link` (module docstring).
RANK_LINK = Link("ucx_shm", 2.17 * GB, 5.7e-3)


def _count(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() and int(value) > 0 else None


def running_ranks(env: Mapping[str, str] | None = None) -> int:
    """How many Legate ranks this program runs as (1 without a launcher), as Legate's launcher reads it."""
    env = os.environ if env is None else env
    for size, _local in LAUNCHER_SIZES:
        found = _count(env.get(size))
        if found is not None:
            return found
    return 1


def local_ranks(env: Mapping[str, str] | None = None) -> int:
    """How many of the ranks run on this host (they share its cores); all of them when the launcher does not say.

    >>> local_ranks({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    2
    """
    env = os.environ if env is None else env
    for size, local in LAUNCHER_SIZES:
        if _count(env.get(size)) is not None:
            return _count(env.get(local)) or running_ranks(env)
    return 1


def run_processors(kind: str = "cpu", env: Mapping[str, str] | None = None) -> int:
    """The processors of `kind` of the whole run: each rank's configured ones times the ranks."""
    return configured_processors(kind, env) * running_ranks(env)


def rank_machine(ranks: int, per_rank: int, kind: str = "cpu") -> Machine:
    """The machine of a run of `ranks` ranks of `per_rank` processors: the ranks, then each rank's processors."""
    for what, n in (("ranks", ranks), ("processors per rank", per_rank)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise MachineError(f"expected a positive number of {what}, but found {n!r}")
    if ranks == 1:
        return Machine(Grid(per_rank, kind=kind))
    return Machine(Grid(ranks, kind=kind), Grid(per_rank, kind=kind))
