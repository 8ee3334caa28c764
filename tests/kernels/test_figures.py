"""One byte count and one predicted time (issue 34 items 2 and 3): what auto's notes say of a candidate is what
its realised plan's analysis counts and what `Plan.predict()` and explain() predict for it. No Legate: plans
are compiled and analysed, never run."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal import kernels, model
from distal._text import bytes_text, seconds_text
from distal.api.plan import Plan
from distal.lower import compile_schedule
from distal.search.auto import _shadow
from tests._strategies import statements

MACHINES = [dt.Machine(dt.Grid(2)), dt.Machine(dt.Grid(3)), dt.Machine(dt.Grid(5)), dt.Machine(dt.Grid(2, 2)),
            dt.Machine(dt.Grid(2, 3)), dt.Machine(dt.Grid(2, 2, 2))]


def moved_bytes(plan: Plan) -> int:
    """The most bytes one processor of the plan receives and reduces, as `stats()` counts them."""
    stats = plan.stats()
    return max((stats["received_bytes"].get(p, 0) + stats["reduced_bytes"].get(p, 0) for p in stats["peak_bytes"]),
               default=0)


def _check_every_candidate(source: dt.Tensor, machine: dt.Machine) -> int:
    """Every candidate auto lists for `source`'s statement on `machine`: its note's bytes are its realised plan's
    (the most one processor receives and reduces, `stats()`), and its note's time is that plan's
    `Plan.predict()` (this machine's model, Legate's configured processors). Returns the candidates checked."""
    mm = model.this_machine()
    found = kernels.options(source.schedule(), machine, model=mm)
    checked = 0
    for option in found:
        if option.kind == "eager":
            continue  # not a plan of Legate tasks
        fresh = _shadow(source.schedule().source, {})  # new data-less tensors: realise gives them formats
        plan = Plan.of(compile_schedule(kernels.realise(option, fresh, machine)))
        want = moved_bytes(plan)
        assert option.comm_bytes == want, option.what
        assert f"moves {bytes_text(want)} per processor" in option.describe(), option.describe()
        assert plan.predict(mm).seconds == pytest.approx(option.seconds, rel=1e-12), option.what
        checked += 1
    return checked


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
@given(data=st.data())
def test_every_candidate_s_note_gives_its_realised_plan_s_bytes_and_time(data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=11, max_operands=3))
    machine = data.draw(st.sampled_from(MACHINES))
    assert _check_every_candidate(drawn.output, machine) >= 1


def _matmul(m: int, k: int, n: int) -> dt.Tensor:
    i, j, l = dt.index_vars("i j l")
    A, B, C = dt.Tensor("A", (m, n)), dt.Tensor("B", (m, k)), dt.Tensor("C", (k, n))
    A[i, j] = B[i, l] * C[l, j]
    return A


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: repr(m))
def test_library_and_search_candidates_on_prime_sizes(machine: dt.Machine) -> None:
    """The library's algorithms among the candidates (1-, 2- and 3-D grids), on prime extents."""
    assert _check_every_candidate(_matmul(13, 11, 7), machine) >= 3


def _matvec(n: int) -> tuple[dt.Tensor, dt.Machine]:
    i, j = dt.index_vars("i j")
    two = dt.Machine(dt.Grid(2))
    a, c = dt.Tensor("a", (n,)), dt.Tensor("c", (n,))
    B = dt.Tensor("B", (n, n), dt.Format("xy -> y", two))  # column blocks
    a[i] = B[i, j] * c[j]
    return a, two


def test_the_issue_s_matrix_vector_product() -> None:
    """`a(i) = B(i,j) * c(j)`, n = 512, B in column blocks on Grid(2): the one-task plan reads B and c whole
    from their stores (2.0 MiB, as explain() warns), not "0 B"; i over Grid(4) reads a quarter of B a point."""
    a, two = _matvec(512)
    found = {o.what: o for o in kernels.options(a.schedule(), two)}
    one = found["one task on one processor"]
    assert one.comm_bytes == 512 * 512 * 8 + 512 * 8
    assert "moves 2.0 MiB per processor" in one.describe()
    assert found["i distributed over Grid(4)"].comm_bytes == 128 * 512 * 8  # its rows of B; c is placed
    assert _check_every_candidate(a, two) >= 5


def test_build_auto_notes_summa_s_bytes() -> None:
    """`kernels.build("auto", Grid(4))` at n = 256: SUMMA's note says the bytes its plan moves per processor."""
    ops = [dt.Tensor(x, (256, 256)) for x in "ABC"]
    notes = kernels.build("auto", dt.Machine(dt.Grid(4)), *ops).notes
    summa = [n for n in notes if " summa on Machine(Grid(2, 2))" in n]
    assert summa
    for note in summa:
        chunk = int(re.search(r"chunk=(\d+)", note).group(1))  # type: ignore[union-attr]
        fresh = [dt.Tensor(x, (256, 256)) for x in "ABC"]
        plan = Plan.of(compile_schedule(kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *fresh, chunk=chunk)))
        assert f"comm {moved_bytes(plan)} B/proc" in note
        assert moved_bytes(plan) >= 256 * 1024  # SUMMA moves two 128 x 256 panels per processor
        assert f"predicted {seconds_text(plan.predict().seconds)}," in note


# -- one predicted time -------------------------------------------------------------------------------------


def _summary_time(text: str) -> str:
    line = next(x for x in text.splitlines() if x.startswith("  predicted ") and "model); peak memory" in x)
    return line.split()[1] + " " + line.split()[2]


def _agree(plan: Plan) -> str:
    """Plan.predict(), explain()'s summary line and its model section give one time; returns it as text."""
    got = plan.predict()
    text = plan.explain()
    want = seconds_text(got.seconds)
    assert _summary_time(text) == want
    assert f"  predicted time (this-machine model, distal.model): {got.summary()}" in text
    assert "as asked" not in got.summary() and "one per point" not in got.summary()
    return want


@pytest.mark.parametrize(("name", "grid"), [("summa", (2, 2)), ("cannon", (2, 2)), ("johnson", (2, 2, 2)),
                                            ("ttv", (4, 1)), ("innerprod", (3,))])
def test_library_plans_predict_one_time(name: str, grid: tuple[int, ...]) -> None:
    """predict() defaults to the processors the run has (Legate's configured ones), as explain() times it."""
    if name == "ttv":
        ops = [dt.Tensor("A", (32, 32)), dt.Tensor("B", (32, 32, 32)), dt.Tensor("c", (32,))]
    elif name == "innerprod":
        ops = [dt.Tensor("a", ()), dt.Tensor("B", (30, 30, 30)), dt.Tensor("C", (30, 30, 30))]
    else:
        ops = [dt.Tensor(x, (96, 96)) for x in "ABC"]
    plan = kernels.build(name, dt.Machine(dt.Grid(*grid)), *ops).compile()
    _agree(plan)
    asked = plan.predict(processors=plan.machine.size + 1)  # another assumption: the summary says so
    assert f"processors={plan.machine.size + 1} as asked" in asked.summary()
    lassen = plan.predict(model.lassen_gpu())
    assert "one per point of the plan's machine" in lassen.summary()
    text = plan.explain(model.lassen_gpu())
    assert lassen.summary() in text
    points = plan.machine.size
    assert f"summary: runs on {points} of {points} cpu processor(s)" in text  # was "of 2": Legate's, not the model's
    assert (f"  predicted {seconds_text(lassen.seconds)} (lassen-gpu model; one per point of the plan's machine); "
            in text)


def _chosen_time(notes: tuple[str, ...] | list[str]) -> str:
    chose = next(n for n in notes if n.startswith("auto: chose"))
    return re.search(r"predicted ([0-9.]+ [mun]?s)", chose).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("grid", [(2,), (4,), (2, 2)])
def test_auto_schedules_predict_the_time_their_notes_give(grid: tuple[int, ...]) -> None:
    """auto on a machine of any size times its candidates on the processors the run will have."""
    a, _ = _matvec(384)
    plan = a.schedule().auto(dt.Machine(dt.Grid(*grid))).compile()
    assert _chosen_time(plan.notes) == _agree(plan)
    R = _matmul(64, 80, 96)
    plan = R.schedule().auto(dt.Machine(dt.Grid(*grid))).compile()
    assert _chosen_time(plan.notes) == _agree(plan)


def test_einsum_plans_predict_the_time_auto_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    """dt.einsum: auto's note gives the plan's predicted time, the copy of host operands onto Legate apart."""
    monkeypatch.setenv("DISTAL_EAGER", "0")  # a plan of Legate tasks (the eager candidate is not one)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((300, 200)), rng.standard_normal((200, 300))
    plan = dt.einsum_plan("ij,jk->ik", x, y, machine=dt.Grid(2))
    assert not plan.eager
    assert _chosen_time(plan.notes) == _agree(plan)
    assert "copying host operands onto Legate" in next(n for n in plan.notes if n.startswith("auto: chose"))


def test_the_model_section_and_the_traffic_table_name_one_node() -> None:
    """On a flat Grid(2,2) a node is a processor of the grid, in the traffic table and in the model section."""
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *[dt.Tensor(x, (8, 8)) for x in "ABC"]).compile()
    text = plan.explain()
    between = plan.analysis().traffic.split("read").between_nodes
    assert between > 0
    got = plan.predict()
    assert sum(r["between_nodes_bytes"] for r in got.per_processor) == between
    assert sum(r["received_bytes"] for r in got.per_processor) == plan.analysis().total_received_bytes
    rows = [x for x in text.splitlines() if x.startswith("    processor ") and "from other nodes" in x]
    assert rows and not any("(node" in x for x in rows)  # the model's node is not the plan's: not shown
    shown = sum(_parse_bytes(re.search(r"and (\S+ \S+) from other nodes", x).group(1)) for x in rows)  # type: ignore[union-attr]
    assert shown == pytest.approx(between, rel=0.05)


def _parse_bytes(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"KiB": 1024, "MiB": 2**20, "B": 1}[unit]


def test_auto_on_a_machine_larger_than_legate_s_says_what_it_timed_on() -> None:
    """auto on Grid(4) where Legate has fewer processors: timed on those, and its note says so."""
    from distal.host import configured_processors

    real = configured_processors("cpu")
    if real >= 4:
        pytest.skip("Legate is configured with 4 processors or more here")
    a, _ = _matvec(512)
    chose = next(n for n in a.schedule().auto(dt.Machine(dt.Grid(4))).notes if n.startswith("auto: chose"))
    assert f"on Machine(Grid(4))'s 4 cpu processor(s), timed on the {real} Legate is configured with" in chose
    if "processors idle" in chose:
        assert f"of {real} processors idle" in chose
