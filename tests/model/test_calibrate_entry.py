"""Calibration's Legate child is an entry point above the library (distal/calibrate_cli.py), run as a process."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from distal.model import calibrate


def test_the_fixed_costs_child_is_the_calibrate_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(args)
        rows = [[1, k, 1e-3 + 1e-4 * k] for k in (1, 2, 4, 8)] + [[k, k, 7e-4 + 4e-4 * k] for k in (2, 4, 8)]
        return subprocess.CompletedProcess(args, 0, stdout=json.dumps(rows) + "\n")

    monkeypatch.setattr(subprocess, "run", run)
    costs = calibrate.measure_fixed_costs()
    assert seen and seen[0][1:] == ["-m", "distal.calibrate_cli", "--fixed-costs-child"]
    assert costs is not None and round(costs["task_seconds"] * 1e6) == 100


def test_the_library_module_refers_to_the_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert calibrate.main(["--fixed-costs-child"]) == 2
    assert "python -m distal.calibrate_cli --fixed-costs-child" in capsys.readouterr().err
