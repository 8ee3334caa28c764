"""bench/report.py's tables of suite_interleaved.json (no timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str, module: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    found = importlib.util.module_from_spec(spec)
    sys.modules[module] = found
    spec.loader.exec_module(found)
    return found


@pytest.fixture(scope="module")
def modules() -> tuple[ModuleType, ModuleType]:
    sys.path.insert(0, str(BENCH))  # report.py and suite.py import the harness, bench/_common
    return _load("report", "bench_report"), _load("suite", "bench_suite_for_report")


def test_the_kernel_table_shows_numpys_time_against_a_tenth_of_a_second(
        modules: tuple[ModuleType, ModuleType]) -> None:
    report, suite = modules
    samples = {"ttv:numpy": [0.08], "ttv:distal": [0.04], "ttv:cupynumeric": [0.16],
               "ttm:numpy": [0.3], "ttm:distal": [0.6], "ttm:cupynumeric": [1.2]}
    prints = {"ttv": {"numpy": [1.0, 1.0], "distal": [1.0, 1.0], "cupynumeric": [1.0, 1.001]},
              "ttm": {"numpy": [2.0], "distal": [2.0], "cupynumeric": [2.0]}}
    higher = suite.summarise_higher(samples, prints)
    higher["sizing"] = {"ttv": suite.choose_size("ttv", (300, 0), 0.001, 0.2, available_mib=8000.0),
                        "ttm": suite.choose_size("ttm", (150, 900), 0.05, 0.2, available_mib=1e9)}
    d = {"machine": {"cores": 2, "cpu_model": "cpu", "memory_gib": 23.5, "python": "3.11",
                     "versions": {"legate": "x", "cupynumeric": "y"}},
         "recorded": "today", "loadavg_after": [0.1, 0.2, 0.3], "seconds_total": 10.0,
         "higher_sizes": {"ttv": higher["sizing"]["ttv"]["size"], "ttm": [240, 900]}, "higher": higher,
         "check": {"sizes": {"ttv": [45, 0]}, "rounds": 5, "ratios": {"ttv_vs_numpy": 1.25}}, "matmul": {}}
    text = "\n".join(report.interleaved_tables(d))
    n = higher["sizing"]["ttv"]["size"][0]
    assert f"| ttv | ({n}, 0) | 0.080 | no | 0.040 | 0.160 | 2.00x | 4.00x | memory | 1.0e-03 |" in text
    assert "| ttm | (240, 900) | 0.300 | yes | 0.600 | 1.200 | 0.50x | 2.00x | calibration (0.05 s at n = 150) |" in text
    assert "baseline (ttv (45, 0); median of 5 rounds): ttv_vs_numpy 1.25x" in text


def test_a_flat_record_in_a_cache_is_read_only_when_only_its_owner_may_write_it(
        modules: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    report, _ = modules
    folder = tmp_path / "results"
    folder.mkdir(mode=0o700)
    path = folder / "suite.json"
    path.write_text('{"machine": {}}')
    path.chmod(0o600)
    assert report._load("suite", folder) == {"machine": {}}
    path.chmod(0o666)  # anybody could have written what it says
    assert report._load("suite", folder) is None
