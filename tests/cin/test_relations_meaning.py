"""Each derivation relation owns its meaning (extents, recovery, bounds, affine forms, tiling).

Table-driven cases per relation, a check that a relation missing a method
breaks loudly, and `Provenance.affine_forms` compared with the loop that
`kernel._Run._forms` ran before the relations held their meaning.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import sympy

import distal as dt
from distal.cin.relations import Derivation, Divide, Form, Fuse, Interval, Precompute, Rotate, Split
from distal.cin.statements import loop_vars
from distal.notation.ast import IndexVar
from distal.schedule.provenance import Provenance

i, j, k = dt.index_vars("i j k")
io, ii, jo, ji, ko, ki, f, r, w = dt.index_vars("io ii jo ji ko ki f r w")
W = dt.Tensor("W", (7,))

DIVIDE = Divide(i, io, ii, 3)     # i: 7 -> io: 3, ii: 3 (9 != 7: guarded)
SPLIT = Split(i, io, ii, 3)       # i: 7 -> io: 3, ii: 3
FUSE = Fuse(i, j, f)              # i: 7, j: 4 -> f: 28
ROTATE = Rotate(k, (i, j), r)     # k: 5 -> r: 5
PRECOMPUTE = Precompute(W[k] * 1.0, (k,), (w,), W)  # k: 5 -> w: 5 (the expression is not interpreted here)
BASE = {i: 7, j: 4, k: 5}


@dataclass(frozen=True)
class Case:
    rel: Derivation
    sources: tuple[IndexVar, ...]
    extents: dict[IndexVar, int]
    have: set[IndexVar]                # known values ...
    fires: set[IndexVar]               # ... determine these
    values: dict[IndexVar, int]        # loop values ...
    recovered: dict[IndexVar, int]     # ... recover these
    guarded: bool                      # a guard is added
    iv: dict[IndexVar, Interval]       # intervals ...
    bounds: dict[IndexVar, Interval]   # ... give these
    tiles: tuple[IndexVar, IndexVar] | None
    offsets: dict[IndexVar, tuple[IndexVar, bool] | None]


CASES = [
    Case(DIVIDE, (i,), {io: 3, ii: 3}, {io, ii}, {i}, {io: 2, ii: 1}, {i: 7}, True,
         {io: (1, 2), ii: (0, 3)}, {i: (3, 6)}, (io, ii), {ii: (i, True), io: None}),
    Case(SPLIT, (i,), {io: 3, ii: 3}, {io, ii}, {i}, {io: 1, ii: 2}, {i: 5}, True,
         {io: (2, 3), ii: (0, 3)}, {i: (6, 7)}, (io, ii), {ii: (i, True), io: None}),
    Case(FUSE, (i, j), {f: 28}, {f}, {i, j}, {f: 9}, {i: 2, j: 1}, False,
         {f: (5, 7)}, {i: (1, 2), j: (1, 3)}, None, {f: None}),
    Case(ROTATE, (k, i, j), {r: 5}, {r, i, j}, {k}, {r: 4, i: 2, j: 1}, {k: 2}, False,
         {r: (3, 4), i: (1, 2), j: (0, 1)}, {k: (4, 5)}, None, {r: None}),
    Case(PRECOMPUTE, (k,), {w: 5}, {w}, {k}, {w: 3}, {k: 3}, False,
         {w: (1, 4)}, {k: (1, 4)}, None, {w: (k, False)}),
]
IDS = [type(c.rel).__name__ for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_relation_knows_its_sources_and_extents(case: Case) -> None:
    assert case.rel.sources == case.sources
    assert case.rel.extents(BASE, None) == case.extents
    assert not case.rel.symbolic()
    for v, n in case.extents.items():
        expr = case.rel.extent_expr(v, lambda u: sympy.Integer(BASE[u]))
        assert int(expr) == n


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_relation_says_what_its_known_variables_determine(case: Case) -> None:
    assert case.rel.fires(set(case.have)) == case.fires
    assert case.rel.fires(set()) == set()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_relation_recovers_its_parents_in_one_step(case: Case) -> None:
    ext = {**BASE, **case.extents}
    vals: dict[IndexVar, Any] = dict(case.values)
    guards: list[Any] = []
    assert case.rel.recover(vals, ext, guards) is True
    assert {v: vals[v] for v in case.recovered} == case.recovered
    assert bool(guards) == case.guarded
    if guards:  # the guard is false exactly past the parent's extent
        assert all(bool(g) == (vals[case.rel.parents[0]] < ext[case.rel.parents[0]]) for g in guards)
    assert case.rel.recover(vals, ext, guards) is False  # nothing left to add
    arrays = {v: np.array([x, 0]) for v, x in case.values.items()}
    vals2, _ = Provenance.of(BASE, (case.rel,)).recover(arrays, ext)
    assert {v: int(vals2[v][0]) for v in case.recovered} == case.recovered


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_relation_derives_intervals(case: Case) -> None:
    ext = {**BASE, **case.extents}
    assert case.rel.bounds(case.iv, ext) == case.bounds
    empty = {v: (0, 0) for v in case.iv}
    assert all(lo >= hi for lo, hi in case.rel.bounds(empty, ext).values())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_relation_says_whether_it_tiles_and_which_parent_is_an_offset(case: Case) -> None:
    assert case.rel.tiles() == case.tiles
    for v, want in case.offsets.items():
        assert case.rel.offset_parent(v) == want


def test_symbolic_sizes_are_reported_by_divide_and_split() -> None:
    g = dt.Param("g")
    assert Divide(i, io, ii, g).symbolic() and Split(i, io, ii, g).symbolic()
    assert Provenance.of(BASE, (Divide(i, io, ii, g),)).extents_or_none() is None
    assert Provenance.of(BASE, (DIVIDE,)).extents_or_none() == {**BASE, io: 3, ii: 3}


def test_relations_stay_frozen_slotted_and_print_as_before() -> None:
    assert [str(c.rel) for c in CASES] == [
        "divide(i, io, ii, 3)", "split(i, io, ii, 3)", "fuse(i, j, f)", "rotate(k, {i, j}, r)",
        "precompute(W(k) * 1.0, {k}, {w}, W)",
    ]
    for c in CASES:
        assert not hasattr(c.rel, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(c.rel, dataclasses.fields(c.rel)[0].name, k)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _Shift(Derivation):
    """A new relation that defines its variables but none of their meaning."""

    parent: IndexVar
    shifted: IndexVar

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.shifted,)


MISSING: list[tuple[str, Callable[[Provenance], object]]] = [
    ("roots", lambda p: p.roots(r)),
    ("extent_expr", lambda p: p.extent_expr(r)),
    ("extents", lambda p: p.extents()),
    ("extents_or_none", lambda p: p.extents_or_none()),
    ("determined", lambda p: p.determined({r})),
    ("recover", lambda p: p.recover({r: 0}, {i: 7, r: 7})),
    ("affine_forms", lambda p: p.affine_forms({}, [r], {i: 7, r: 7})),
]


@pytest.mark.parametrize("name,use", MISSING, ids=[m[0] for m in MISSING])
def test_a_relation_missing_a_method_breaks_loudly(name: str, use: Callable[[Provenance], object]) -> None:
    prov = Provenance.of(BASE, (_Shift(i, r),))
    with pytest.raises(NotImplementedError, match="_Shift"):
        use(prov)


# -- affine forms: the loop kernel._Run._forms ran before, kept here as the oracle ------------------------


def _forms_before(prov: Provenance, ints: Mapping[IndexVar, int], block: Sequence[IndexVar],
                  ext: Mapping[IndexVar, int]) -> tuple[dict[IndexVar, Form], dict[IndexVar, int]] | None:
    forms: dict[IndexVar, Form] = {b: (b, 0) for b in block}
    upper = {b: ext[b] for b in block}
    changed = True
    while changed:
        changed = False
        for d in reversed(prov.derivations):
            if isinstance(d, Divide | Split):
                if d.parent in ints or d.parent in forms:
                    continue
                o, i_ = d.outer, d.inner
                ei = ext[i_]
                if o in ints and i_ in forms:
                    b, off = forms[i_]
                    forms[d.parent] = (b, ints[o] * ei + off)
                elif o in forms and i_ in ints and ei == 1:
                    b, off = forms[o]
                    forms[d.parent] = (b, off + ints[i_])
                elif (o in forms and (i_ in forms or i_ in ints)) or (i_ in forms and o in forms):
                    return None
                else:
                    continue
                b, off = forms[d.parent]
                upper[b] = min(upper[b], ext[d.parent] - off)
                changed = True
            elif isinstance(d, Fuse | Rotate):
                src = (d.fused,) if isinstance(d, Fuse) else (d.result, *d.by)
                if any(v in forms for v in src):
                    return None
            else:
                assert isinstance(d, Precompute)
                for v, w_ in zip(d.vars, d.workspace_vars):
                    if w_ in forms and v not in forms and v not in ints:
                        forms[v] = forms[w_]
                        changed = True
    return forms, upper


Make = Callable[[dt.Schedule, dt.Tensor, dt.Tensor], dt.Schedule]
SCHEDULES: list[tuple[str, Make]] = [
    ("divide", lambda s, B, C: s.divide(i, io, ii, 3)),
    ("split-1", lambda s, B, C: s.split(k, ko, ki, 1)),
    ("divide-split", lambda s, B, C: s.divide(i, io, ii, 2).split(k, ko, ki, 4).reorder([io, ko, ii, j, ki])),
    ("distribute", lambda s, B, C: s.distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 3)))),
    ("fuse", lambda s, B, C: s.fuse(i, j, f)),
    ("rotate", lambda s, B, C: s.divide(i, io, ii, 2).rotate(k, [io], r)),
    ("precompute", lambda s, B, C: s.precompute(B[i, k] * C[k, j], [k], [w])),
]


@pytest.mark.parametrize("name,make", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_affine_forms_match_the_loop_kernel_forms_ran(name: str, make: Make) -> None:
    A, B, C = dt.Tensor("A", (7, 5)), dt.Tensor("B", (7, 6)), dt.Tensor("C", (6, 5))
    A[i, j] = B[i, k] * C[k, j]
    sched = make(A.schedule(), B, C)
    prov = sched.provenance
    ext = prov.extents()
    loops = list(loop_vars(sched.stmt))
    compared = 0
    for cut in range(len(loops) + 1):
        outer, block = loops[:cut], loops[cut:]
        for point in itertools.product(*({0, ext[v] - 1} for v in outer)):
            values, _ = prov.recover(dict(zip(outer, point)), ext)
            ints = {v: int(x) for v, x in values.items()}
            assert prov.affine_forms(ints, block, ext) == _forms_before(prov, ints, block, ext)
            compared += 1
    assert compared > len(loops)
