"""bench/_common, the benchmarks' harness, and the rules of bench/: every script registered with `distal bench`,
no script importing another, one reader of /proc/meminfo, results where they belong (no timing)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from distal.cli import _ONLY_WHEN_NAMED, BENCHES

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py"))


@pytest.fixture(scope="module")
def common() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # the scripts find the harness on their folder's path
    import _common  # type: ignore[import-not-found]

    return _common


def _imports(path: Path) -> set[str]:
    """Every module `path` imports (top-level names and the full dotted names of from-imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_every_script_is_registered_with_distal_bench() -> None:
    assert sorted(BENCHES.values()) == sorted(p.name for p in SCRIPTS)
    assert len(set(BENCHES.values())) == len(BENCHES)
    assert {"gpu-gemm", "check"} <= _ONLY_WHEN_NAMED <= set(BENCHES)


def test_no_script_imports_another() -> None:
    scripts = {p.stem for p in SCRIPTS}
    for path in SCRIPTS:
        roots = {name.split(".")[0] for name in _imports(path)}
        assert not roots & scripts, f"{path.name} imports {sorted(roots & scripts)}: share it in bench/_common"


def test_no_script_reaches_into_the_runtime() -> None:
    """The diagnostics time the runtime through its public hooks (`distal.runtime.observed`)."""
    for path in [*SCRIPTS, *sorted((BENCH / "_common").glob("*.py"))]:
        private = {n for n in _imports(path) if n.startswith("distal.runtime._")}
        assert not private, f"{path.name} reaches into {sorted(private)}: use distal.runtime's __all__"


def test_one_reader_of_meminfo() -> None:
    readers = [p.relative_to(BENCH) for p in BENCH.rglob("*.py") if "/proc/meminfo" in p.read_text()]
    assert readers == [Path("_common/host.py")]


def test_a_child_that_never_answers_is_killed_and_reported_as_a_hang(common: ModuleType, tmp_path: Path) -> None:
    script = tmp_path / "hangs.py"
    script.write_text("import sys, time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(common.ChildHung, match=r"(?s)gave no result within 1 s and was killed: a hang.*started"):
        common.child(script, ["--sizes", "64"], {}, timeout=1.0)


def test_a_child_that_answers_gives_its_last_json_line(common: ModuleType, tmp_path: Path) -> None:
    script = tmp_path / "answers.py"
    script.write_text("import os\nprint('noise')\nprint('{\"config\": \"%s\"}' % os.environ.get('LEGATE_CONFIG'))\n")
    found = common.child(script, [], common.legate_env(1500, cpus=3), timeout=60.0)
    assert found == {"config": "--cpus 3 --gpus 0 --omps 0 --utility 1 --sysmem 1500"}
    assert common.child(script, [], {}, timeout=60.0) == {"config": "None"}  # the parent's LEGATE_CONFIG is not passed


def test_a_child_that_does_not_fit_in_host_memory_is_refused(common: ModuleType) -> None:
    have = common.available_mib()
    assert have is not None
    with pytest.raises(MemoryError, match=r"expected at least .* MiB of available host memory for matmul n=65536"):
        common.check_host_memory("matmul n=65536", have * 4 + 1)
    common.check_host_memory("tiny", 1.0)


def test_the_machine_description_reads_memory_and_the_cpu(common: ModuleType) -> None:
    found = common.machine()
    assert found["memory_gib"] == round(common.meminfo_kib("MemTotal") / 2**20, 1)
    assert {"vendor", "vector_extensions"} <= set(found["cpu"]) and found["cores"] >= 1
    assert common.meminfo_kib("NoSuchField") is None


def test_rounds_interleave_and_rotate(common: ModuleType) -> None:
    order: list[str] = []
    samples = common.interleaved_rounds({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, 2)
    assert order == ["a", "b"] * 3 and [len(v) for v in samples.values()] == [2, 2]  # a warm-up round, then 2
    assert [common.round_order(("x", "y", "z"), r) for r in range(2)] == [["x", "y", "z"], ["y", "z", "x"]]


def test_records_go_to_dated_folders_of_the_results_named_by_distal_bench(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISTAL_BENCH_RESULTS"}
    code = "import _common; print(_common.RESULTS)"
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCH, env=env, capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()) == BENCH / "results"  # scripts run by hand record in bench/results
    code = "import _common; print(_common.record('probe', {'x': 1}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCH, env={**env, "DISTAL_BENCH_RESULTS": str(tmp_path)},
                          capture_output=True, text=True, check=True)
    path = Path(done.stdout.strip())
    assert path.parent.parent == tmp_path and path.name == "probe.json" and path.parent.name[:4].isdigit()
    rec = json.loads(path.read_text())
    assert rec["x"] == 1 and {"machine", "recorded", "commit", "uncommitted_changes"} <= set(rec)


def test_checks_baseline_child_refuses_to_start_where_it_would_not_fit(
        common: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_check_for_harness", BENCH / "check.py")
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_check_for_harness", check)
    spec.loader.exec_module(check)
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 1")  # kept: the child sizes its pool only where none is given
    monkeypatch.setattr(common.host, "available_mib", lambda: 10.0)
    assert check.main(["--baseline-child", "--quick", "--rounds", "1"]) == 2  # nothing measured, Legate not started
    assert "MiB of available host memory for check's baseline" in capsys.readouterr().err
