"""Every library algorithm equals numpy.einsum (reference executor): grids, sizes, counts."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels

MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]
GRIDS_2D = [(2, 2), (2, 3), (3, 2)]


def matmul_operands(m: int, n: int, k: int, seed: int = 0) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(seed)
    return (
        dt.Tensor("A", (m, n)),
        dt.Tensor.from_array("B", rng.standard_normal((m, k))),
        dt.Tensor.from_array("C", rng.standard_normal((k, n))),
    )


def check_matmul(sched: dt.Schedule, A: dt.Tensor, B: dt.Tensor, C: dt.Tensor) -> None:
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-10, atol=1e-10)


def test_names_are_the_pinned_ones() -> None:
    assert kernels.names() == [
        "summa", "cannon", "pumma", "johnson", "solomonik", "cosma", "ttv", "innerprod", "ttm", "mttkrp",
    ]


@pytest.mark.parametrize("name", ["summa", "cannon", "pumma"])
@pytest.mark.parametrize("grid", GRIDS_2D)
@pytest.mark.parametrize("size", [(12, 12, 12), (13, 7, 11)])
def test_2d_algorithms_on_grids(name: str, grid: tuple[int, int], size: tuple[int, int, int]) -> None:
    A, B, C = matmul_operands(*size)
    check_matmul(kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C), A, B, C)


@pytest.mark.parametrize("name", ["johnson", "solomonik", "cosma"])
@pytest.mark.parametrize("size", [(8, 8, 8), (9, 5, 7)])
def test_3d_algorithms_on_a_cube(name: str, size: tuple[int, int, int]) -> None:
    A, B, C = matmul_operands(*size)
    check_matmul(kernels.build(name, dt.Machine(dt.Grid(2, 2, 2)), A, B, C), A, B, C)


@pytest.mark.parametrize("name", MATMUL)
@pytest.mark.parametrize("procs", [1, 2, 3, 5, 6, 7, 12])
def test_library_picks_a_valid_machine_for_any_processor_count(name: str, procs: int) -> None:
    m = kernels.machine(name, procs, (10, 9, 11))
    assert sorted(set(m.bind(procs).values())) == list(range(procs))  # every processor gets grid points
    A, B, C = matmul_operands(10, 9, 11)
    check_matmul(kernels.build(name, m, A, B, C), A, B, C)


def test_machine_shapes() -> None:
    assert kernels.machine("johnson", 8).shape == (2, 2, 2)
    assert kernels.machine("johnson", 27).shape == (3, 3, 3)
    assert kernels.machine("summa", 6).shape == (3, 2)
    assert kernels.machine("solomonik", 8).shape == (2, 2, 2)
    assert kernels.machine("solomonik", 16, c=1).shape == (4, 4, 1)
    assert kernels.machine("cosma", 8, (4096, 4096, 64)).shape[2] == 1  # small k: no k split
    assert kernels.machine("cosma", 8, (64, 64, 100000)).shape == (1, 1, 8)  # large k: split k only


@pytest.mark.parametrize(("procs", "side"), [(2, 2), (4, 2), (7, 2), (8, 2), (9, 3), (27, 3), (128, 6), (256, 7)])
def test_johnson_over_decomposes_to_keep_every_processor_busy(procs: int, side: int) -> None:
    """Paper 7.1.2: a cube of side 2 on 4 GPUs, 6 on 128, 7 on 256, bound block-wise."""
    m = kernels.machine("johnson", procs)
    assert m.shape == (side,) * 3
    assert sorted(set(m.bind(procs).values())) == list(range(procs))


@pytest.mark.parametrize(("procs", "grid"), [(2, (2, 2, 1)), (3, (2, 2, 1)), (6, (2, 2, 2)), (8, (2, 2, 2)),
                                             (12, (4, 4, 1)), (18, (3, 3, 2)), (32, (4, 4, 2))])
def test_solomonik_over_decomposes_on_counts_that_are_not_layered_squares(procs: int, grid: tuple[int, ...]) -> None:
    m = kernels.machine("solomonik", procs)
    assert m.shape == grid
    assert sorted(set(m.bind(procs).values())) == list(range(procs))


def test_over_decomposed_johnson_computes_the_product() -> None:
    A, B, C = matmul_operands(10, 9, 11)
    m = kernels.machine("johnson", 4)
    assert m.shape == (2, 2, 2)
    check_matmul(kernels.build("johnson", m, A, B, C), A, B, C)


def test_higher_order_kernels() -> None:
    rng = np.random.default_rng(3)
    b = rng.standard_normal((7, 6, 5))
    B = dt.Tensor.from_array("B", b)
    A = dt.Tensor("A", (7, 6))
    c = dt.Tensor.from_array("c", rng.standard_normal(5))
    kernels.build("ttv", kernels.machine("ttv", 6), A, B, c).evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ijk,k->ij", b, c.to_numpy()), rtol=1e-10)

    a = dt.Tensor("a", ())
    C = dt.Tensor.from_array("C", rng.standard_normal((7, 6, 5)))
    kernels.build("innerprod", kernels.machine("innerprod", 3), a, B, C).evaluate(backend="reference")
    np.testing.assert_allclose(a.to_numpy(), np.sum(b * C.to_numpy()), rtol=1e-10)

    A3 = dt.Tensor("A", (7, 6, 4))
    M = dt.Tensor.from_array("M", rng.standard_normal((5, 4)))
    kernels.build("ttm", kernels.machine("ttm", 4), A3, B, M).evaluate(backend="reference")
    np.testing.assert_allclose(A3.to_numpy(), np.einsum("ijk,kl->ijl", b, M.to_numpy()), rtol=1e-10)

    A2 = dt.Tensor("A", (7, 4))
    Cm = dt.Tensor.from_array("Cm", rng.standard_normal((6, 4)))
    D = dt.Tensor.from_array("D", rng.standard_normal((5, 4)))
    kernels.build("mttkrp", kernels.machine("mttkrp", 8), A2, B, Cm, D).evaluate(backend="reference")
    expected = np.einsum("ijk,jl,kl->il", b, Cm.to_numpy(), D.to_numpy())
    np.testing.assert_allclose(A2.to_numpy(), expected, rtol=1e-10)


@pytest.mark.legate
def test_build_sets_formats_and_says_so() -> None:
    A, B, C = matmul_operands(4, 4, 4)
    m = dt.Machine(dt.Grid(2, 2))
    B.set_format(dt.Format("xy -> x*", m))
    sched = kernels.build("summa", m, A, B, C)
    assert str(B.format) == "xy -> xy"
    assert any("B" in n and "x*" in n for n in sched.notes)
    assert "note: B redistributed from xy -> x* to xy -> xy by synthesized collectives" in sched.compile().explain()


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(dt.DistalError, match=r"expected an algorithm name \(summa, cannon, .*mttkrp, or 'auto'\), but found 'sumo'"):
        kernels.build("sumo", dt.Machine(dt.Grid(2, 2)))


def test_wrong_machine_and_operands_are_refused() -> None:
    A, B, C = matmul_operands(4, 4, 4)
    with pytest.raises(dt.MachineError, match="expected a 3-dimensional machine for johnson"):
        kernels.build("johnson", dt.Machine(dt.Grid(2, 2)), A, B, C)
    with pytest.raises(dt.NotationError, match="expected 3 operands \\(output first\\) for summa, but found 2"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, B)
    with pytest.raises(dt.MachineError, match="expected a positive processor count"):
        kernels.machine("summa", 0)
    bad = dt.Tensor.from_array("B", np.zeros((5, 4)))
    with pytest.raises(dt.NotationError, match="one extent"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, bad, C)


HIERARCHICAL = [dt.Machine(dt.Grid(2, 2), dt.Grid(2, 1)), dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2)),
                dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))]


@pytest.mark.parametrize("name", ["summa", "cannon", "pumma"])
@pytest.mark.parametrize("machine", HIERARCHICAL, ids=repr)
def test_two_level_variants(name: str, machine: dt.Machine) -> None:
    A, B, C = matmul_operands(13, 11, 9)
    sched = kernels.build(name, machine, A, B, C)
    assert str(A.format) == "[xy -> xy, xy -> xy]"
    assert "distribute({iio, jio}" in str(sched) and "m.x@1" in str(sched)
    check_matmul(sched, A, B, C)


def test_two_level_machines_only_for_the_2d_algorithms() -> None:
    A, B, C = matmul_operands(4, 4, 4)
    with pytest.raises(dt.MachineError, match="expected a one-level machine for johnson \\(two-level variants: summa, cannon, pumma, innerprod\\)"):
        kernels.build("johnson", dt.Machine(dt.Grid(2, 2, 2), dt.Grid(2, 1, 1)), A, B, C)


def test_cosma_steps_follow_the_memory_bound() -> None:
    from distal.kernels._machines import cosma_steps

    assert cosma_steps((2, 2, 2), (64, 64, 64), None) == 1
    # A's tile 32x32 = 1024 elements; B and C chunks 32 x (32 + 32) = 2048 elements in one step
    assert cosma_steps((2, 2, 2), (64, 64, 64), (1024 + 2048) * 8) == 1
    assert cosma_steps((2, 2, 2), (64, 64, 64), (1024 + 1024) * 8) == 2
    assert cosma_steps((2, 2, 2), (64, 64, 64), (1024 + 512) * 8) == 4
    with pytest.raises(dt.MachineError, match="expected at least 8704 bytes per processor for COSMA"):
        cosma_steps((2, 2, 2), (64, 64, 64), 1024 * 8)
    A, B, C = matmul_operands(64, 64, 64)
    sched = kernels.build("cosma", dt.Machine(dt.Grid(2, 2, 2)), A, B, C, memory=(1024 + 512) * 8)
    assert "split(ki, kio, kii, 8)" in str(sched)  # 32 of k per layer in 4 steps
    check_matmul(sched, A, B, C)


def test_build_keeps_the_users_statement_up_to_renaming() -> None:
    x, y, z = dt.index_vars("x y z")
    A, B, C = matmul_operands(6, 6, 6)
    A[x, y] = B[x, z] * C[z, y]
    check_matmul(kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, B, C), A, B, C)
    with pytest.raises(dt.NotationError, match="expected A's statement to be summa's"):
        A[x, y] = B[x, z] * C[y, z]  # C transposed: not the algorithm's statement
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, B, C)


def test_build_keeps_an_accumulating_statement() -> None:
    i, j, k = dt.index_vars("i j k")
    A = dt.Tensor.from_array("A", np.ones((4, 4)))
    B = dt.Tensor.from_array("B", np.eye(4))
    C = dt.Tensor.from_array("C", np.full((4, 4), 2.0))
    A[i, j] += B[i, k] * C[k, j]
    kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), A, B, C).evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), np.full((4, 4), 3.0))


def test_build_refuses_an_input_computed_from_the_output() -> None:
    i, j, k = dt.index_vars("i j k")
    A, B, C = matmul_operands(4, 4, 4)
    A[i, j] = B[i, k] * C[k, j]
    with pytest.raises(dt.NotationError, match=r"expected B as the output of summa .* but found input A computed from it"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), B, C, A)


@pytest.mark.parametrize("procs", [2, 3, 4])
def test_ttm_distributes_i_only_and_moves_nothing(procs: int) -> None:
    """Paper 7.2.2: TTM distributes i; C is replicated, so no processor receives anything."""
    rng = np.random.default_rng(procs)
    A = dt.Tensor("A", (8, 6, 4))
    B = dt.Tensor.from_array("B", rng.standard_normal((8, 6, 5)))
    C = dt.Tensor.from_array("C", rng.standard_normal((5, 4)))
    m = kernels.machine("ttm", procs)
    assert m.shape == (procs,)
    sched = kernels.build("ttm", m, A, B, C)
    plan = sched.compile()
    stats = plan.stats()
    assert stats["total_received_bytes"] == 0 and stats["total_reduced_bytes"] == 0
    assert "total received 0 B, reduced 0 B" in plan.explain()
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ijk,kl->ijl", B.to_numpy(), C.to_numpy()), rtol=1e-10)


# -- auto: by predicted time --------------------------------------------------------------------------------------

AUTO_MACHINES = [dt.Machine(dt.Grid(2)), dt.Machine(dt.Grid(4)), dt.Machine(dt.Grid(2, 2)), dt.Machine(dt.Grid(3)),
                 dt.Machine(dt.Grid(2, 3)), dt.Machine(dt.Grid(2, 2, 2)), dt.Machine(dt.Grid(2), dt.Grid(2, 2))]


def _chosen(sched: dt.Schedule) -> str:
    return next(n for n in sched.notes if n.startswith("auto: chose"))


@pytest.mark.parametrize("machine", AUTO_MACHINES, ids=repr)
@pytest.mark.parametrize("n", [256, 512])
def test_auto_uses_every_processor(machine: dt.Machine, n: int) -> None:
    from distal import model

    A, B, C = (dt.Tensor(x, (n, n)) for x in "ABC")
    sched = kernels.build("auto", machine, A, B, C, model=model.lassen_cpu())
    plan = sched.compile()
    assert plan.machine is not None
    used = set(plan.machine.bind(machine.size).values())
    assert used == set(range(machine.size)), _chosen(sched)
    assert "processor(s) idle" not in _chosen(sched)


def test_auto_uses_every_processor_of_this_machine() -> None:
    """With the default model (this machine, calibrated): the tutorial's example."""
    A, B, C = (dt.Tensor(x, (256, 256)) for x in "ABC")
    plan = kernels.build("auto", dt.Machine(dt.Grid(4)), A, B, C).compile()
    assert plan.machine is not None and set(plan.machine.bind(4).values()) == {0, 1, 2, 3}


def test_auto_reports_candidates_with_time_bytes_and_memory_and_picks_the_fastest() -> None:
    from distal import model

    A, B, C = (dt.Tensor(x, (512, 512)) for x in "ABC")
    machine = dt.Machine(dt.Grid(4))
    cands = kernels.candidates(machine, A, B, C, model=model.lassen_gpu())
    assert {c.algorithm for c in cands} == {"summa", "cannon", "pumma", "johnson", "solomonik", "cosma"}
    best = min(cands, key=lambda c: c.seconds)
    sched = kernels.build("auto", machine, A, B, C, model=model.lassen_gpu())
    text = _chosen(sched)
    assert text.startswith(f"auto: chose {best.algorithm} on {best.machine!r}")
    assert "predicted" in text and "comm" in text and "peak" in text


def test_auto_prefers_an_idle_processor_only_when_predicted_faster() -> None:
    """A tiny product on a model where every launch costs a second: the one-point plan wins and says it idles."""
    from distal import model

    slow = model.lassen_cpu().with_(launch_seconds=1.0, task_seconds=1.0)
    A, B, C = (dt.Tensor(x, (4, 4)) for x in "ABC")
    cands = kernels.candidates(dt.Machine(dt.Grid(4)), A, B, C, model=slow)
    best = min([c for c in cands if c.fits], key=lambda c: (c.seconds, c.idle))
    chosen = _chosen(kernels.build("auto", dt.Machine(dt.Grid(4)), A, B, C, model=slow))
    assert chosen.startswith(f"auto: chose {best.algorithm} on {best.machine!r}")
    faster_busy = [c for c in cands if c.idle == 0 and c.seconds < best.seconds]
    assert not faster_busy


def test_auto_respects_the_memory_bound() -> None:
    from distal import model

    A, B, C = (dt.Tensor(x, (1024, 1024)) for x in "ABC")
    machine = dt.Machine(dt.Grid(2, 2, 2))
    cands = kernels.candidates(machine, A, B, C, model=model.lassen_gpu())
    bound = sorted({c.peak_bytes for c in cands})[0]
    sched = kernels.build("auto", machine, A, B, C, model=model.lassen_gpu(), memory=bound)
    chosen = _chosen(sched)
    assert "over the memory bound" not in chosen
    assert any(chosen.startswith(f"auto: chose {c.describe()}") and c.peak_bytes <= bound for c in cands)
    assert min(c.seconds for c in cands) < min(c.seconds for c in cands if c.peak_bytes <= bound)  # it cost time


@pytest.mark.parametrize("name", ["ttv", "innerprod", "ttm", "mttkrp"])
def test_auto_on_higher_order_statements(name: str) -> None:
    from distal import model

    shapes = {"ttv": [(64, 64), (64, 64, 64), (64,)], "innerprod": [(), (64, 64, 64), (64, 64, 64)],
              "ttm": [(64, 64, 32), (64, 64, 64), (64, 32)], "mttkrp": [(64, 16), (64, 64, 64), (64, 16), (64, 16)]}
    ops = [dt.Tensor(f"T{k}", s) for k, s in enumerate(shapes[name])]
    sched = kernels.build("auto", dt.Machine(dt.Grid(4)), *ops, model=model.lassen_cpu())
    assert _chosen(sched).startswith(f"auto: chose {name} on ")


def test_machine_auto() -> None:
    from distal import model

    m = kernels.machine("auto", 4, shape=(256, 256, 256), model=model.lassen_cpu())
    assert set(m.bind(4).values()) == {0, 1, 2, 3}
    with pytest.raises(dt.MachineError, match=r"expected shape=\(m, n, k\) of a matrix product"):
        kernels.machine("auto", 4)


def test_cli_explain_auto_uses_every_processor(capsys: pytest.CaptureFixture[str]) -> None:
    from distal.cli import main

    assert main(["explain", "A(i,j) = B(i,k) * C(k,j)", "--shape", "A=256x256", "--shape", "B=256x256",
                 "--shape", "C=256x256", "--algorithm", "auto", "--grid", "4"]) == 0
    out = capsys.readouterr().out
    chosen = next(line for line in out.splitlines() if "auto: chose" in line)
    assert "idle" not in chosen
    assert "predicted time (this-machine model" in out
