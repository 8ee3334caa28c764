"""explain() says which formatted operands the runtime gathers into a second store (issue 11: what we print
is what runs): the decision is `distal.lower.in_place`, read by explain and by the runtime alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan
from distal.lower.in_place import gathered_tensors
from distal.lower.reductions import partials_reduction

M22 = dt.Machine(dt.Grid(2, 2))
M4 = dt.Machine(dt.Grid(4))
MH22 = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))
MH = dt.Machine(dt.Grid(2, 2), dt.Grid(2))

i, j = dt.index_vars("i j")
io, jo, ii, ji = dt.index_vars("io jo ii ji")

GATHERED = "gathered into one store"


def _said_gathered(plan: Plan) -> set[str]:
    """The tensors whose placement line in explain() says they are gathered."""
    text = plan.explain().split("  communication")[0]
    return {line.split(":")[0].strip() for line in text.splitlines() if GATHERED in line}


def _algorithm(name: str, machine: dt.Machine, n: int, data: bool = False
               ) -> tuple[Plan, dt.Tensor, np.ndarray | None]:
    """C = A B by a library algorithm, every operand in the algorithm's own format on ``machine``."""
    from distal.kernels._algorithms import ALGORITHMS

    alg = ALGORITHMS[name]
    rng = np.random.default_rng(n)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    A = dt.Tensor("A", (n, n), alg.format_of(0, machine))
    if data:
        B = dt.Tensor.from_array("B", b, alg.format_of(1, machine))
        C = dt.Tensor.from_array("C", c, alg.format_of(2, machine))
    else:
        B = dt.Tensor("B", (n, n), alg.format_of(1, machine))
        C = dt.Tensor("C", (n, n), alg.format_of(2, machine))
    return dt.kernels.build(name, machine, A, B, C).compile(), A, (b @ c if data else None)


def _blocks_not_affine(data: bool = False) -> tuple[Plan, dt.Tensor, np.ndarray | None]:
    """A 4x4 launch over 2x2 blocks: point (p, q) needs block (p // 2, q // 2), no affine projection."""
    b = np.random.default_rng(4).standard_normal((8, 8))
    fmt = dt.Format("xy -> xy", M22)
    B = dt.Tensor.from_array("B", b, fmt) if data else dt.Tensor("B", (8, 8), fmt)
    A = dt.Tensor("A", (8, 8), dt.Format("xy -> xy", M22))
    A[i, j] = B[i, j] + 1
    return A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(4, 4))).compile(), A, b + 1


def _elementwise(b_spec: Any, a_spec: Any, machine: dt.Machine, accumulate: bool,
                 data: bool = False) -> tuple[Plan, dt.Tensor, np.ndarray | None]:
    """A (+)= 2 B - 1 over a 2x2 plan, B and A in the formats given on ``machine``."""
    rng = np.random.default_rng(7)
    a0, b = rng.standard_normal((7, 5)), rng.standard_normal((7, 5))
    fb, fa = dt.Format(b_spec, machine), dt.Format(a_spec, machine)
    B = dt.Tensor.from_array("B", b, fb) if data else dt.Tensor("B", (7, 5), fb)
    A = dt.Tensor.from_array("A", a0, fa) if data else dt.Tensor("A", (7, 5), fa)
    if accumulate:
        A[i, j] += B[i, j] * 2 - 1  # type: ignore[misc]
    else:
        A[i, j] = B[i, j] * 2 - 1
        a0 = np.zeros_like(a0)
    return A.schedule().distribute([i, j], [io, jo], [ii, ji], M22).compile(), A, a0 + b * 2 - 1


def test_explain_says_tiles_that_are_not_blocks_are_gathered() -> None:
    plan, _, _ = _blocks_not_affine()
    text = plan.explain()
    assert ("B: gathered into one store before the launches (its tiles are not whole blocks or boxes of blocks of "
            "its format at positions linear in the launch point); the plan reads that store") in text
    assert "A: gathered into one store: a new one the launches write" in text
    assert "laid out by its format after the launches" in text
    assert plan.stats()["gathered"] == ["A", "B"] and plan.stats()["in_place"] == []


@pytest.mark.parametrize(("name", "machine"), [
    ("summa", M22), ("solomonik", dt.kernels.machine("solomonik", 8)), ("summa", MH22), ("cannon", MH22),
])
def test_explain_of_algorithms_on_their_formats_gathers_nothing(name: str, machine: dt.Machine) -> None:
    plan, _, _ = _algorithm(name, machine, 8)
    text = plan.explain()
    assert GATHERED not in text
    if name == "solomonik":  # its output's partials are held across the Cannon steps, reduced once per tile
        assert "A: the launches add into per-processor partials held across kios, each reduced into its tile once " \
               "per stage; the reduced result is one store, laid out by its format after" in text
    else:
        assert "A: written in place in its device blocks" in text
    assert "B: read in place in its device blocks" in text and "C: read in place in its device blocks" in text
    assert plan.stats()["gathered"] == []


def test_an_accumulated_output_that_is_gathered_is_laid_out_again() -> None:
    """A's row blocks on the plan's 2x2 grid: two points write one block, so A is gathered and B is not."""
    plan, _, _ = _elementwise("xy -> xy", "xy -> x*", M22, accumulate=True)
    text = plan.explain()
    assert ("A: gathered into one store before the launches (its tiles are not whole blocks or boxes of blocks of "
            "its format at positions linear in the launch point); the plan reads that store, and it is laid out "
            "again by its format after") in text
    assert "B: read in place in its device blocks" in text
    assert _said_gathered(plan) == {"A"}


def test_unformatted_tensors_get_no_in_place_line() -> None:
    B = dt.Tensor("B", (4, 4))
    A = dt.Tensor("A", (4, 4))
    A[i, j] = B[i, j] + 1
    plan = A.schedule().compile()
    text = plan.explain()
    assert GATHERED not in text and "in place" not in text
    assert plan.stats()["gathered"] == [] and plan.stats()["in_place"] == []


# -- what explain says against what the runtime does ---------------------------------------------------------


@pytest.fixture
def moved(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """Records, as the plan runs, the placed stores gathered into one store and the stores laid out again."""
    from distal.runtime import _execute, _tensor_storage

    seen: dict[str, list[Any]] = {"gather": [], "from_store": []}

    def trap(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[name].append(args[0])
            return real(*args, **kwargs)
        return wrapper

    for module in (_tensor_storage, _execute):
        monkeypatch.setattr(module, "gather", trap("gather", module.gather))
        monkeypatch.setattr(module, "from_store", trap("from_store", module.from_store))
    yield seen


CASES = {
    "blocks not affine": lambda: _blocks_not_affine(data=True),
    "summa": lambda: _algorithm("summa", M22, 8, data=True),
    "solomonik": lambda: _algorithm("solomonik", dt.kernels.machine("solomonik", 8), 8, data=True),
    "hierarchical summa": lambda: _algorithm("summa", MH22, 8, data=True),
    "rows over 4 on 2x2": lambda: _elementwise("xy -> x", "xy -> x", M4, accumulate=False, data=True),
    "hierarchical broadcast": lambda: _elementwise(["xy -> xy", "xy -> x"], ["xy -> x*", "xy -> *"], MH,
                                                   accumulate=False, data=True),
    "row blocks accumulated": lambda: _elementwise("xy -> xy", "xy -> x*", M22, accumulate=True, data=True),
    "rows read in place": lambda: _elementwise("xy -> x*", "xy -> xy", M22, accumulate=True, data=True),
}


@pytest.mark.legate
@pytest.mark.parametrize("case", sorted(CASES))
def test_explain_names_exactly_the_operands_the_run_gathers(legate: object, moved: dict[str, list[Any]],
                                                           case: str) -> None:
    plan, out, want = CASES[case]()
    said = _said_gathered(plan)
    assert said == {plan.tensors[n].name for n in gathered_tensors(plan)}
    inputs = [plan.tensor(info) for info in plan.tensors if not info.output]
    moved["gather"].clear()
    moved["from_store"].clear()
    plan.run()
    ran = {t.name for t in inputs if any(held is t.storage for held in moved["gather"])}
    if moved["from_store"]:
        ran.add(out.name)  # the output was written in one store and laid out by its format after
    if partials_reduction(plan) is not None:  # per-processor partials, reduced into one store laid out after
        assert f"{out.name}: the launches " in plan.explain() and "laid out by its format after" in plan.explain()
        ran.discard(out.name)
    assert said == ran
    assert want is not None
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-10, atol=1e-12)
