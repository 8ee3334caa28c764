"""The Legate 26.1 / 26.6 differences (runtime/_versions.py), with stand-ins for either runtime,
and the copy task that replaces Legate's copy with several ranks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distal import runtime as rt
from distal.runtime import _versions

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


class Legate261:
    """The part of a legate 26.1 Runtime the version checks read: no realm_config."""

    def __init__(self, node_count: int = 1) -> None:
        self.node_count = node_count
        self.node_id = 0


class _Realm:
    def __init__(self, sysmem: int | None) -> None:
        self.sysmem = sysmem


class Legate266(Legate261):
    """A legate 26.6 Runtime as far as the checks go: realm_config() reports the memory."""

    def __init__(self, sysmem: int | None, node_count: int = 1) -> None:
        super().__init__(node_count)
        self._sysmem = sysmem

    def realm_config(self) -> _Realm:
        return _Realm(self._sysmem)


@pytest.mark.parametrize(("config", "mb"), [
    ("--cpus 1 --sysmem 512 --utility 1", 512),
    ("--cpus 1 --sysmem=300", 300),
    ("--cpus 2", _versions.LEGATE_DEFAULT_SYSMEM_MB),
    ("--sysmem nonsense", _versions.LEGATE_DEFAULT_SYSMEM_MB),
    ("--sysmem 0", _versions.LEGATE_DEFAULT_SYSMEM_MB),
])
def test_26_1_reads_the_memory_from_legate_config(config: str, mb: int) -> None:
    assert not _versions.has_realm_config(Legate261())
    assert _versions.sysmem_bytes(Legate261(), {"LEGATE_CONFIG": config}) == mb << 20


def test_26_1_without_legate_config_has_legates_default() -> None:
    assert _versions.sysmem_bytes(Legate261(), {}) == _versions.LEGATE_DEFAULT_SYSMEM_MB << 20


def test_26_6_reports_its_memory_itself() -> None:
    runtime = Legate266(sysmem=3 << 30)
    assert _versions.has_realm_config(runtime)
    assert _versions.sysmem_bytes(runtime, {"LEGATE_CONFIG": "--sysmem 512"}) == 3 << 30
    # a report without a value falls back to the flag, as on 26.1
    assert _versions.sysmem_bytes(Legate266(sysmem=None), {"LEGATE_CONFIG": "--sysmem 700"}) == 700 << 20


@pytest.mark.parametrize("make", [Legate261, lambda n: Legate266(1 << 30, n)])
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_copies_go_through_the_task_exactly_with_several_ranks(make: Any, ranks: int) -> None:
    runtime = make(ranks)
    assert _versions.rank_count(runtime) == ranks
    assert _versions.copies_by_task(runtime) is (ranks > 1)


def test_a_runtime_that_names_no_rank_count_is_one_rank() -> None:
    assert _versions.rank_count(object()) == 1
    assert not _versions.copies_by_task(object())


def test_only_the_versions_module_names_a_release_specific_api() -> None:
    """Every 26.1/26.6 difference is asked of runtime/_versions.py: no other module calls these names."""
    named = re.compile(r"\brealm_config\b|\bissue_copy\(")
    allowed = {"_versions.py": named, "_copy.py": re.compile(r"\bissue_copy\(")}
    for path in sorted(RUNTIME.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = named.search(line)
            if found is None or line.lstrip().startswith(("#", '"', "-", "`")):
                continue
            ok = path.name in allowed and allowed[path.name].search(line)
            assert ok, f"{path.name}:{number} names {found.group(0)!r} outside _versions.py: {line.strip()}"


@pytest.mark.legate
def test_rank_count_and_machine_info_on_one_rank(machine: rt.MachineInfo) -> None:
    assert rt.rank_count() == machine.ranks == 1 and machine.rank == 0
    assert machine.as_dict()["ranks"] == 1


@pytest.mark.legate
@pytest.mark.parametrize("shape", [(7,), (5, 9), (3, 4, 6)])
def test_the_copy_task_copies_as_legate_does(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch,
                                              shape: tuple[int, ...]) -> None:
    """Arrays in and out, a view, and a reduction state's copy through the task (as with several ranks)."""
    from distal.runtime import _copy

    monkeypatch.setattr(_copy, "copies_by_task", lambda runtime: True)
    calls: list[bool] = []
    real = _copy.copy_store

    def counted(target: Any, source: Any, by_task: bool | None = None) -> None:
        calls.append(True)
        real(target, source, by_task)

    data = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 1.5 - 3
    store = rt.from_numpy(data)
    assert np.array_equal(rt.to_numpy(store), data)
    view = rt.wrap(store.handle.slice(0, slice(1, shape[0])), store.dtype)
    assert np.array_equal(rt.to_numpy(view), data[1:])
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert np.array_equal(rt.to_numpy(rt.from_numpy(ints)), ints)
    monkeypatch.setattr(_copy, "copy_store", counted)
    from distal.runtime import _store

    monkeypatch.setattr(_store, "copy_store", counted)
    assert np.array_equal(rt.to_numpy(store), data) and calls
