"""The time model: what a plan's predicted time is made of, on the presets and on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import distal as dt
from distal import kernels, model
from distal.model import calibrate


def _matmul(n: int) -> list[dt.Tensor]:
    return [dt.Tensor(x, (n, n)) for x in "ABC"]


def test_presets_describe_the_papers_machines() -> None:
    gpu, cpu = model.lassen_gpu(), model.lassen_cpu()
    assert gpu.per_node == 4 and gpu.processor.kind == "gpu"
    assert cpu.per_node == 2 and cpu.processor.kind == "cpu"
    assert gpu.inter.bandwidth == 18e9 and cpu.inter is model.links.EDR_LASSEN
    assert model.dgx_a100().per_node == 8
    assert model.preset("Lassen-GPU") == gpu
    assert "4 gpu per node" in gpu.describe()


def test_compute_is_flops_at_the_leaf_rate() -> None:
    n = 4096
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *_matmul(n)).compile()
    m = model.lassen_gpu()
    p = plan.predict(m)
    expected = 2 * n**3 / 4 / m.processor.rate("GEMM") + p.steps * m.task_seconds
    assert p.compute_seconds == pytest.approx(expected, rel=1e-9)
    assert p.flops == 2 * n**3
    assert p.seconds > p.compute_seconds  # communication is not all hidden
    assert p.idle == 0 and p.fits


def test_single_precision_products_run_at_the_processors_single_rate() -> None:
    """A GEMM leaf multiplying float32 runs `single` times as fast as in float64 (2.1-3.0 measured on this
    machine's BLAS): the model had timed attention's float32 batched GEMM at the double rate, twice what ran."""
    from dataclasses import replace

    n = 4096
    m = model.lassen_gpu()
    fast = replace(m, processor=replace(m.processor, single=2.5))
    compute = {}
    for dtype in ("float64", "float32"):
        ops = [dt.Tensor(x, (n, n), dtype=dtype) for x in "ABC"]
        plan = kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *ops).compile()
        compute[dtype] = plan.predict(fast).compute_seconds - plan.predict(fast).steps * m.task_seconds
        assert plan.predict(m).compute_seconds == pytest.approx(  # the preset has no single rate: 1
            2 * n**3 / 4 / m.processor.rate("GEMM") + plan.predict(m).steps * m.task_seconds, rel=1e-9)
    assert compute["float64"] == pytest.approx(2.5 * compute["float32"], rel=1e-9)
    assert fast.processor.rate("TTV", None, "float32") == m.processor.rate("TTV")  # streaming kinds: as they were
    with pytest.raises(model.ModelError, match=r"single-precision rate \(single\).*single=0\.0"):
        replace(m.processor, single=0.0)


def test_no_communication_means_no_communication_time() -> None:
    ops = [dt.Tensor("A", (512, 64, 32)), dt.Tensor("B", (512, 64, 48)), dt.Tensor("C", (48, 32))]
    p = kernels.build("ttm", kernels.machine("ttm", 8), *ops).compile().predict(model.lassen_gpu())
    assert p.comm_seconds == 0.0
    assert all(row["intra_bytes"] == 0 and row["inter_bytes"] == 0 for row in p.per_processor)


def test_bytes_between_nodes_use_the_nodes_port() -> None:
    """The same plan on one node (NVLink) and spread over four nodes (InfiniBand) of one processor each."""
    plan = kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), *_matmul(8192)).compile()
    one_node = plan.predict(model.lassen_gpu())
    spread = plan.predict(model.lassen_gpu().with_(per_node=1))
    assert one_node.comm_seconds < spread.comm_seconds
    assert sum(r["inter_bytes"] for r in one_node.per_processor) == 0
    assert sum(r["intra_bytes"] for r in spread.per_processor) == 0
    exact = plan.stats()["total_received_bytes"]
    assert sum(r["inter_bytes"] for r in spread.per_processor) == pytest.approx(exact)


def test_over_decomposed_grid_on_fewer_processors() -> None:
    """Johnson's 2x2x2 cube on 4 processors: two points each, none idle; a 1x1x1 cube leaves 3 idle."""
    ops = _matmul(2048)
    over = kernels.build("johnson", kernels.machine("johnson", 4), *ops).compile().predict(model.lassen_gpu(), 4)
    assert over.processors_total == 4 and over.idle == 0
    assert all(row["points"] == 2 for row in over.per_processor)
    ops = _matmul(2048)
    small = kernels.build("johnson", dt.Machine(dt.Grid(1, 1, 1)), *ops).compile().predict(model.lassen_gpu(), 4)
    assert small.idle == 3
    assert over.seconds < small.seconds


def test_peak_memory_against_the_processors_memory() -> None:
    p = kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *_matmul(60000)).compile().predict(model.lassen_gpu())
    assert not p.fits and "DOES NOT FIT" in p.summary()
    assert p.peak_bytes > model.lassen_gpu().processor.memory


def test_broadcasts_cost_the_sender() -> None:
    """On a wide grid over many nodes SUMMA's row and column broadcasts are slower than Cannon's shifts."""
    m = model.lassen_gpu().with_(per_node=1)
    summa = kernels.build("summa", dt.Machine(dt.Grid(8, 8)), *_matmul(16384)).compile().predict(m)
    cannon = kernels.build("cannon", dt.Machine(dt.Grid(8, 8)), *_matmul(16384)).compile().predict(m)
    assert cannon.comm_seconds < summa.comm_seconds


def test_this_machine_is_calibrated_once_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DISTAL_MACHINE_MODEL", raising=False)  # the suite pins a frozen model (tests/conftest.py)
    fixed = {"plan_seconds": 4e-4, "launch_seconds": 1e-4, "task_seconds": 5e-5}
    monkeypatch.setattr(calibrate, "measure_fixed_costs", lambda: dict(fixed))  # no Legate child in a test
    first = model.this_machine()
    assert (first.plan_seconds, first.launch_seconds, first.task_seconds) == (4e-4, 1e-4, 5e-5)
    saved = json.loads((tmp_path / "machine-model.json").read_text())
    assert set(saved["flops"]) == set(model.LEAF_KINDS) and saved["bandwidth"] > 0
    assert set(saved["curves"]) == {"GEMM", "TTM", "MTTKRP"} and all(len(c) >= 3 for c in saved["curves"].values())

    def refuse() -> None:
        raise AssertionError("measured again although cached")

    monkeypatch.setattr(calibrate, "calibrate", refuse)
    again = model.this_machine()
    assert again == first
    assert again.cores == saved["cores"]


def test_explain_shows_the_predicted_time() -> None:
    plan = kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), *_matmul(1024)).compile()
    text = plan.explain(model.lassen_gpu())
    p = plan.predict(model.lassen_gpu())
    assert f"  predicted time (lassen-gpu model, distal.model): {p.summary()}" in text
    assert "    processor 3: 2 point(s)" in text  # a flat machine: its processors are the nodes, none shown
    assert "(4 processors; one per point of the plan's machine)" in p.summary()  # a model of another machine


@pytest.mark.parametrize("name", ["summa", "cannon", "johnson"])
def test_estimated_bytes_match_the_exact_ones_where_nothing_is_cached(name: str) -> None:
    """exact=False (the formats alone, for plans of hundreds of nodes) against explain's exact counts."""
    plan = kernels.build(name, kernels.machine(name, 8), *_matmul(512)).compile()
    m = model.lassen_gpu().with_(per_node=2)
    exact, estimate = plan.predict(m), model.predict(plan, m, exact=False)
    assert estimate.seconds == pytest.approx(exact.seconds, rel=0.25)
    got = sum(r["intra_bytes"] + r["inter_bytes"] for r in estimate.per_processor)
    want = sum(r["intra_bytes"] + r["inter_bytes"] for r in exact.per_processor)
    assert got >= want  # the estimate never counts less than what is really received


def test_explain_compares_with_legates_configured_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """this machine's model: the peak is compared with --sysmem shared by --cpus, and the line says so."""
    from distal.model.calibrate import model_of
    from tests.model.test_rates import THIS_LIKE

    plan = kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), *_matmul(256)).compile()
    m = model_of(THIS_LIKE)
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2 --sysmem 3000 --utility 1")
    text = plan.explain(m)
    assert ("of 1500.0 MiB per processor (Legate's --sysmem 3000 MiB (LEGATE_CONFIG), shared by 2 CPU "
            "processor(s); fits)") in text
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2 --sysmem 1")  # 512 KiB each: below the plan's peak per processor
    assert "of 512.0 KiB per processor (Legate's --sysmem 1 MiB (LEGATE_CONFIG), shared by 2 CPU processor(s); " \
           "DOES NOT FIT)" in plan.explain(m)
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2")
    assert "(the calibrated host memory per core: LEGATE_CONFIG gives no --sysmem; fits)" in plan.explain(m)
    monkeypatch.delenv("LEGATE_CONFIG")
    assert "distal's default --sysmem " in plan.explain(m)
    assert "(lassen-gpu's processor memory; fits)" in plan.explain(model.lassen_gpu())


def test_a_pinned_calibration_file_is_the_model_of_every_process(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """DISTAL_MACHINE_MODEL: read as it is (another host's file too), never measured, never written."""
    from tests.model.test_rates import THIS_LIKE

    path = tmp_path / "shared.json"
    path.write_text(json.dumps({**THIS_LIKE, "key": "another-host|64|0|x|v1"}))
    monkeypatch.setenv("DISTAL_MACHINE_MODEL", str(path))
    monkeypatch.setenv("DISTAL_CACHE_DIR", str(tmp_path / "cache"))

    def refuse() -> None:
        raise AssertionError("measured although a calibration file is pinned")

    monkeypatch.setattr(calibrate, "calibrate", refuse)
    got = model.this_machine(recalibrate=True)
    assert got == calibrate.model_of(THIS_LIKE)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("n", [64, 512, 2048])
def test_a_runs_first_compute_at_half_rate_costs_min_of_compute_and_the_warmup(n: int) -> None:
    """The warm-up (`MachineModel.warmup_seconds`): one more min(compute, warm-up) per run, said in the summary
    and the model's description; none on the presets; negative refused."""
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 1)), *_matmul(n)).compile()
    cold = model.lassen_cpu()
    assert cold.warmup_seconds == 0.0
    warm = cold.with_(warmup_seconds=2e-3)
    before, after = plan.predict(cold), plan.predict(warm)
    assert before.warmup_seconds == 0.0 and "warm-up" not in before.summary()
    assert after.warmup_seconds == pytest.approx(min(before.compute_seconds, 2e-3), rel=1e-12)
    assert after.seconds == pytest.approx(before.seconds + after.warmup_seconds, rel=1e-12)
    assert "warm-up" in after.summary() and after.as_dict()["warmup_seconds"] == after.warmup_seconds
    assert "first 2 ms of compute per run at half rate" in warm.describe()
    with pytest.raises(dt.DistalError):
        cold.with_(warmup_seconds=-1.0)


def test_the_calibrated_model_carries_the_measured_warmup() -> None:
    kinds = ("GEMM", "TTV", "TTM", "MTTKRP", "INNERPROD", "GENERIC")
    data = {"cores": 2, "flops": dict.fromkeys(kinds, 9e10), "bandwidth": 3e10, "memory": 1 << 34}
    assert calibrate.model_of(data).warmup_seconds == calibrate.DEFAULT_WARMUP
    assert calibrate.model_of({**data, "warmup_seconds": 1e-3}).warmup_seconds == 1e-3
