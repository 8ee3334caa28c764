"""User errors of the time model's machine descriptions and of a pinned calibration file, each asserting its message."""

from __future__ import annotations

from pathlib import Path

import pytest

from distal import model
from distal.errors import MachineError
from distal.machine import Level
from distal.model import Link, MachineModel, ModelError
from distal.model.calibrate import pinned_model

LINK = Link("fast", 1e10, 0.0)


def test_node_levels_that_do_not_divide_the_node() -> None:
    with pytest.raises(ModelError, match=r"expected node levels whose sizes multiply to the 6 processors of a "
                       r"node, the outermost joined by fast\(10 GB/s, 0 us\), but found socket 4 fast\(10 GB/s, 0 us\)"):
        MachineModel("bad", model.lassen_gpu().processor, 6, LINK, LINK, levels=(Level("socket", 4, LINK),))


def test_unknown_broadcast_delivery_and_fold() -> None:
    with pytest.raises(ModelError, match="expected a broadcast delivery among nearest, tree, owner, but found 'mpi'"):
        model.lassen_gpu().with_(broadcast="mpi")
    with pytest.raises(ModelError, match="expected a reduction fold among fold, tree, but found 'ring'"):
        model.lassen_gpu().with_(fold="ring")
    with pytest.raises(ModelError, match="expected a tree radix of at least 2, but found 1"):
        model.lassen_gpu().with_(radix=1)


def test_bad_level() -> None:
    with pytest.raises(MachineError, match="expected a positive size or shape for level socket, but found 0"):
        Level("socket", 0, LINK)


def test_pinned_calibration_file_that_is_not_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "model.json"
    bad.write_text("{}")
    monkeypatch.setenv("DISTAL_MACHINE_MODEL", str(bad))
    with pytest.raises(ModelError, match=r"expected DISTAL_MACHINE_MODEL to name a calibration file of "
                       r"distal.model.calibrate, but found '.*model.json' \(KeyError: 'cores'\)"):
        model.this_machine()
    with pytest.raises(ModelError, match=r"but found '.*missing.json' \(FileNotFoundError"):
        pinned_model(str(tmp_path / "missing.json"))
