"""The whole suite's fixtures, and the guard that keeps `pytest -m "not legate"` a run without Legate.

A test that starts or uses Legate carries the `legate` marker (pyproject.toml):
`@pytest.mark.legate`, or `pytestmark = pytest.mark.legate` for a whole module.
The guard checks it. While an unmarked test is set up and runs:

- distal's runtime looks as if Legate had not started (`is_started()` is
  False), and any call that needs Legate (`ensure_started`, and through it
  `legate_runtime`, `processor_count`, every store, launch and placement)
  fails the test with a message naming the marker. Legate stays started
  for the rest of the pytest process once a marked test started it, so the
  guard empties distal's record of the start (`runtime._start._machine`) and
  replaces the one function that imports Legate (`_start._import_legate`);
  every use goes through `ensure_started`, which then has to call it.
- a first import of `legate` or `cupynumeric` (importing cuPyNumeric starts
  Legate) fails the same way; so does one while the test files are collected.
- a Python child process that imports Legate fails the test once it has run
  (tests/_guard_site/sitecustomize.py, first on the children's PYTHONPATH,
  records the import; a child given an environment without that PYTHONPATH
  is not seen).

A test that needs cuPyNumeric carries the `cupynumeric` marker as well: where
cuPyNumeric is not installed (legate 26.1's multi-rank environment leaves it
out, tools/multirank_env.sh) it is skipped, with the reason, instead of
failing on the import.

A session fixture that fails so stays failed for the tests after it (pytest
caches it): the message names the unmarked test that asked for it first. At
the end of a run that selected no marked test, the session fails if `legate`
was imported anyway.

The time model of "this machine" is pinned for the session to a frozen
calibration (tests/_data/machine-model.json, measured on a 2-core AVX2 machine
of CI's kind; `DISTAL_MACHINE_MODEL`, unless the caller set it): without it,
the first test to ask for the model would calibrate this machine, which runs
a Legate child (in an unmarked test, a guard failure on a fresh machine) and
makes auto's choices depend on the load at that moment. Tests of calibration
itself clear the variable and give it frozen measurements.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
from collections.abc import Collection, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ.setdefault("DISTAL_MACHINE_MODEL", str(Path(__file__).resolve().parent / "_data" / "machine-model.json"))

MARKER = "legate"
CUPYNUMERIC = "cupynumeric"  # the marker of tests that need cuPyNumeric installed
LEGATE_PACKAGES = ("legate", "cupynumeric")
GUARD_SITE = Path(__file__).resolve().parent / "_guard_site"


def needs_marker(what: str, where: str) -> str:
    """The message of a Legate start or use in a test (or collection) not marked `legate`."""
    return (
        f"{where} {what}, but it is not marked `{MARKER}`: mark the test with @pytest.mark.{MARKER} "
        f"(or the module with `pytestmark = pytest.mark.{MARKER}`), so that `pytest -m \"not {MARKER}\"` "
        "runs without Legate"
    )


def _importing() -> bool:
    """Whether the import system is loading a module now (an import statement, `importlib.import_module`), not
    only looking one up (`importlib.util.find_spec`, which asks the same finders but loads nothing)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_find_and_load_unlocked":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class LegateImportGuard(importlib.abc.MetaPathFinder):
    """A finder that fails a first import of the given packages (a package already imported is left alone); a
    lookup that loads nothing (`importlib.util.find_spec`) is left alone too."""

    def __init__(self, where: str, packages: Sequence[str] = LEGATE_PACKAGES) -> None:
        self.where = where
        self.packages = tuple(packages)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top in self.packages and top not in sys.modules and _importing():
            pytest.fail(needs_marker(f"imported {fullname!r} (a first import starts Legate)", self.where))
        return None


@contextmanager
def imports_blocked(where: str, packages: Sequence[str] = LEGATE_PACKAGES) -> Iterator[LegateImportGuard]:
    """Within the block, a first import of `packages` fails with `needs_marker`."""
    guard = LegateImportGuard(where, packages)
    sys.meta_path.insert(0, guard)
    try:
        yield guard
    finally:
        sys.meta_path.remove(guard)


@contextmanager
def children_watched(where: str, packages: Sequence[str] = LEGATE_PACKAGES) -> Iterator[None]:
    """Python children started within the block record a first import of `packages`; if one did, the block
    fails with `needs_marker` when it ends."""
    handle, record = tempfile.mkstemp(prefix="distal-legate-children-", suffix=".txt")
    os.close(handle)
    patch = pytest.MonkeyPatch()
    patch.setenv("DISTAL_TEST_LEGATE_CHILDREN", record)
    patch.setenv("DISTAL_TEST_LEGATE_PACKAGES", ",".join(packages))
    patch.setenv("PYTHONPATH", os.pathsep.join([str(GUARD_SITE), *filter(None, [os.environ.get("PYTHONPATH")])]))
    try:
        yield
        seen = Path(record).read_text().strip()
        if seen:
            pytest.fail(needs_marker(f"started Legate in a child process: {seen}", where))
    finally:
        patch.undo()
        os.unlink(record)


@contextmanager
def legate_blocked(where: str) -> Iterator[None]:
    """Within the block, distal's runtime has not started Legate and cannot start it; nor can an import,
    here or in a Python child process."""
    start = importlib.import_module("distal.runtime._start")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        pytest.fail(needs_marker("started or used Legate through distal (distal.runtime.ensure_started)", where))

    patch = pytest.MonkeyPatch()
    patch.setattr(start, "_machine", None)
    patch.setattr(start, "_import_legate", refuse)
    try:
        with imports_blocked(where), children_watched(where):
            yield
    finally:
        patch.undo()


def is_marked(item: pytest.Item) -> bool:
    """Whether the test carries the `legate` marker (on itself, its class or its module)."""
    return item.get_closest_marker(MARKER) is not None


@contextmanager
def guarded(item: pytest.Item) -> Iterator[None]:
    """Legate blocked around a test not marked `legate`; nothing for a marked one."""
    if is_marked(item):
        yield
    else:
        with legate_blocked(item.nodeid):
            yield


def cupynumeric_missing(item: pytest.Item) -> str | None:
    """Why `item` cannot run here: it is marked `cupynumeric` and cuPyNumeric is not installed; else None.
    (Looked up without importing it: an import starts Legate.)"""
    if item.get_closest_marker(CUPYNUMERIC) is None or importlib.util.find_spec("cupynumeric") is not None:
        return None
    return ("needs cuPyNumeric, which is not installed here (legate 26.1's multi-rank environment leaves it out); "
            "`pip install nvidia-cupynumeric` of the installed legate's release runs it")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    # Setup is guarded too: a session fixture that starts Legate, first asked for by an unmarked test.
    # Teardown is not: the last test of a module or session tears down what the marked ones set up.
    missing = cupynumeric_missing(item)
    if missing is not None:
        pytest.skip(missing)
    with guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    with guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    with imports_blocked("collecting the tests (a module-level import in a test file)"):
        return (yield)


_IMPORTED_ANYWAY = pytest.StashKey[str]()


def imported_anyway(items: Sequence[pytest.Item], modules: Collection[str]) -> str | None:
    """What is wrong with a run of `items` after which `modules` are imported, or None."""
    if not items or any(is_marked(item) for item in items) or "legate" not in modules:
        return None
    return f"no selected test is marked `{MARKER}`, but `legate` was imported during the run"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    message = imported_anyway(getattr(session, "items", []), sys.modules.keys())
    if message is not None:
        session.config.stash[_IMPORTED_ANYWAY] = message
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    message = config.stash.get(_IMPORTED_ANYWAY, None)
    if message is not None:
        terminalreporter.write_sep("=", "legate marker", red=True)
        terminalreporter.write_line(f"ERROR: {message}", red=True)


@pytest.fixture(scope="session")
def machine() -> Any:
    """Legate, started with distal's defaults (or the user's LEGATE_CONFIG); only in tests marked `legate`."""
    from distal import runtime as rt

    return rt.ensure_started()
