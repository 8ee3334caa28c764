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


def test_a_cached_model_is_read_only_from_a_file_no_one_else_could_write(tmp_path: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("DISTAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(calibrate.PINNED, raising=False)
    made: list[int] = []

    def measured(fixed_costs: bool = True) -> dict[str, Any]:
        made.append(1)
        return {"key": calibrate._key(), "flops": dict.fromkeys(calibrate.LEAF_KINDS, 1e9), "bandwidth": 1e10,
                "memory": 1 << 30, "cores": 2}

    monkeypatch.setattr(calibrate, "calibrate", measured)
    calibrate.this_machine()
    path = calibrate.cache_path()
    assert made == [1] and oct(path.parent.stat().st_mode & 0o777) == oct(0o700)
    assert oct(path.stat().st_mode & 0o777) == oct(0o644) and calibrate._load() is not None
    calibrate.this_machine()
    assert made == [1]  # read from the cache
    os.chmod(path, 0o666)  # a file others could have written: measured again and replaced
    assert calibrate._load() is None
    calibrate.this_machine()
    assert made == [1, 1] and calibrate._load() is not None
    os.chmod(path.parent, 0o777)  # a directory of the user's own left open: closed to group and others
    path.unlink()
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"key": calibrate._key()}))
    path.symlink_to(planted)  # a link: not trusted
    assert calibrate._load() is None
    calibrate.this_machine()
    assert made == [1, 1, 1] and not path.is_symlink() and not path.parent.stat().st_mode & 0o022


def test_the_childs_reduction_rows_become_the_models_reduction_costs() -> None:
    run = {"points": [1], "tasks": [1], "seconds": 1e-3}
    rows = [{"n": n, "with": w, "without": 0.01, "points_with": [8], "tasks_with": [8], "points_without": [8],
             "tasks_without": [8], "instance_bytes": (n // 2) ** 2 * 8, "per_processor": 4}
            for n, w in ((512, 0.012), (1536, 0.012 + 4 * (4 << 20) * 1e-9))]
    got = calibrate.fit_child({"runtime": [run, {**run, "points": [4], "tasks": [4], "seconds": 2e-3}],
                               "reduction": rows, "cpus": 2})
    assert round(got["reduction_instance_seconds"] * 1e6) == 500  # 2 ms over 4 instances on a processor
    assert round(got["reduction_page_seconds"] * 1e12) == 1000  # 1 ns per byte of two whole huge pages
    record = {"key": calibrate._key(), "flops": dict.fromkeys(calibrate.LEAF_KINDS, 1e9), "bandwidth": 1e10,
              "memory": 1 << 30, "cores": 2, **{k: got[k] for k in calibrate.DEFAULT_REDUCTION_COSTS}}
    made = calibrate.model_of(record)
    assert made.reduction_instance_seconds == got["reduction_instance_seconds"]
    older = {k: v for k, v in record.items() if not k.startswith("reduction")}  # a record of before: the defaults
    default = calibrate.DEFAULT_REDUCTION_COSTS["reduction_instance_seconds"]
    assert calibrate.model_of(older).reduction_instance_seconds == default
