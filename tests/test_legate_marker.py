"""The guard of the `legate` marker (tests/conftest.py): a test without it cannot start or use Legate.

These tests are not marked, so the guard is on while they run: distal's runtime
looks unstarted and refuses to start, however many marked tests started Legate
before them. The last one is marked and sees Legate as usual.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.conftest import (
    GUARD_SITE,
    MARKER,
    children_watched,
    guarded,
    imported_anyway,
    imports_blocked,
    is_marked,
    needs_marker,
)

FAKE_PACKAGE = "distal_test_no_such_legate_package"


def _refusal(call: Any) -> str:
    with pytest.raises(pytest.fail.Exception) as caught:
        call()
    return str(caught.value)


def test_an_unmarked_test_cannot_start_legate(request: pytest.FixtureRequest) -> None:
    from distal import runtime as rt

    assert not rt.is_started()
    message = _refusal(rt.ensure_started)
    assert request.node.nodeid in message
    assert "@pytest.mark.legate" in message and "not marked `legate`" in message
    assert not rt.is_started()


@pytest.mark.parametrize("use", ["legate_runtime", "processor_count", "from_numpy", "zeros"])
def test_every_use_of_legate_through_distal_is_refused(use: str, request: pytest.FixtureRequest) -> None:
    """Uses through other modules' own names for the start-up functions (`from ._start import ...`) too."""
    from distal import runtime as rt

    calls = {
        "legate_runtime": rt.legate_runtime,
        "processor_count": lambda: rt.processor_count("cpu"),
        "from_numpy": lambda: rt.from_numpy(np.zeros(3)),
        "zeros": lambda: rt.zeros((2, 2)),
    }
    assert request.node.nodeid in _refusal(calls[use])


def test_a_first_import_of_a_guarded_package_is_refused() -> None:
    with imports_blocked("tests/x.py::test_y", packages=(FAKE_PACKAGE,)):
        message = _refusal(lambda: importlib.import_module(FAKE_PACKAGE))
        assert message == needs_marker(f"imported {FAKE_PACKAGE!r} (a first import starts Legate)", "tests/x.py::test_y")
        assert _refusal(lambda: importlib.import_module(f"{FAKE_PACKAGE}.core")) == message  # its package first
        with pytest.raises(ModuleNotFoundError):  # other packages import as ever
            importlib.import_module("distal_test_no_such_other_package")
    with pytest.raises(ModuleNotFoundError):  # the guard is gone after the block
        importlib.import_module(FAKE_PACKAGE)


@pytest.mark.parametrize("name", ["legate", "cupynumeric"])
def test_legate_cannot_be_imported_here_unless_it_was_already(name: str) -> None:
    if name in sys.modules:
        pytest.skip(f"{name} was imported by a marked test before this one")
    assert "not marked `legate`" in _refusal(lambda: importlib.import_module(name))
    assert name not in sys.modules


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_an_unmarked_tests_python_children_load_the_recorder() -> None:
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(GUARD_SITE)
    done = _child("import sys; print('sitecustomize' in sys.modules, sys.modules['sitecustomize'].__file__)")
    assert done.stdout.split() == ["True", str(GUARD_SITE / "sitecustomize.py")], done.stderr


def test_a_child_that_imports_a_guarded_package_fails_the_test_after_it_ran() -> None:
    with pytest.raises(pytest.fail.Exception) as caught, children_watched("tests/x.py::test_y", (FAKE_PACKAGE,)):
        done = _child(f"import {FAKE_PACKAGE}.core")
        assert f"No module named '{FAKE_PACKAGE}'" in done.stderr  # the child itself runs on unchanged
    message = str(caught.value)
    assert message.startswith("tests/x.py::test_y started Legate in a child process: process ")
    assert f"imported {FAKE_PACKAGE!r}" in message and "@pytest.mark.legate" in message
    with children_watched("tests/x.py::test_y", (FAKE_PACKAGE,)):  # a child that imports nothing guarded
        assert _child("import json").returncode == 0


def test_the_guard_is_off_for_marked_items_and_undone_after_unmarked_ones() -> None:
    start = importlib.import_module("distal.runtime._start")
    marked = SimpleNamespace(nodeid="m", get_closest_marker=lambda name: object() if name == MARKER else None)
    unmarked = SimpleNamespace(nodeid="u", get_closest_marker=lambda name: None)
    assert is_marked(marked) and not is_marked(unmarked)
    guarded_here = start._import_legate
    with guarded(marked):
        assert start._import_legate is guarded_here
    with guarded(unmarked):
        assert start._machine is None
        assert _refusal(start.ensure_started).startswith("u started or used Legate")
    assert start._import_legate is guarded_here


def test_a_run_without_marked_tests_fails_if_legate_was_imported() -> None:
    marked = SimpleNamespace(get_closest_marker=lambda name: object() if name == MARKER else None)
    unmarked = SimpleNamespace(get_closest_marker=lambda name: None)
    assert imported_anyway([unmarked, unmarked], {"numpy", "legate", "legate.core"}) == (
        "no selected test is marked `legate`, but `legate` was imported during the run")
    assert imported_anyway([unmarked], {"numpy", "distal"}) is None
    assert imported_anyway([unmarked, marked], {"legate"}) is None
    assert imported_anyway([], {"legate"}) is None


@pytest.mark.legate
def test_a_marked_test_starts_legate(machine: Any) -> None:
    from distal import runtime as rt

    assert rt.is_started() and rt.ensure_started() is machine
    assert rt.processor_count("cpu") >= 1
