"""Finishing a redistribution plan (`distal.redist.finish`): the plain data the runtime interprets (no Legate)."""

from __future__ import annotations

import ast
from pathlib import Path

import distal as dt
from distal.format.layout import layout
from distal.redist import Mesh, synthesize
from distal.redist.finish import factor_grid, finish, finish_program
from distal.redist.formats import plan_redistribution
from distal.redist.frames import point_coords
from distal.redist.moves import Exchange, Moves, Permute, ProgramMoves, Reframe, Reposition

M22 = dt.Machine(dt.Grid(2, 2))
M24 = dt.Machine(dt.Grid(2, 4))
M342 = dt.Machine(dt.Grid(3, 4, 2))


def _steps(moves: Moves) -> list[object]:
    return [s for stage in moves.stages for s in (stage.steps if isinstance(stage, ProgramMoves) else (stage,))]


def test_a_permutation_on_a_prime_grid_is_one_affine_launch() -> None:
    moves = finish(plan_redistribution(dt.Format("xy -> xy", M22), dt.Format("xy -> yx", M22), (4, 4)))
    (step,) = _steps(moves)
    assert isinstance(step, Permute) and step.lead == (1, 0) and not step.pinned
    assert moves.enter is None and moves.exit is None
    assert moves.source == layout(dt.Format("xy -> xy", M22), (4, 4))
    assert moves.target == layout(dt.Format("xy -> yx", M22), (4, 4))
    assert moves.factors.shape() == (2, 2) and moves.height == 4


def test_fixed_faces_enter_and_exit() -> None:
    moves = finish(plan_redistribution(dt.Format("xy -> x0", M22), dt.Format("xy -> y1", M22), (4, 4)))
    assert moves.enter is not None and moves.enter.label == "expand"
    assert moves.enter.lead == ((0, 0), (None, 0))  # the y factor reads the face's block
    assert moves.exit is not None and moves.exit.label == "restrict"
    assert moves.exit.lead == ((0, 0), (None, 1)) and moves.exit.grid == (2, 1)  # only the face y=1 keeps blocks


def test_conflicting_padding_repads_between_two_programs() -> None:
    moves = finish(plan_redistribution(dt.Format("xy -> xy", M24), dt.Format("xy -> yx", M24), (5, 6)))
    kinds = [type(s) for s in moves.stages]
    assert kinds == [ProgramMoves, Reposition, ProgramMoves]
    repad = moves.stages[1]
    assert isinstance(repad, Reposition) and repad.label.startswith("repad")
    assert [(d, old.extent, old.padded, new.padded) for d, old, new in repad.moves] == [(0, 5, 6, 8), (1, 6, 8, 6)]


def test_relabelled_steps_are_pinned_launches_on_the_frame() -> None:
    plan = plan_redistribution(dt.Format("xy -> y**", M342), dt.Format("xy -> x0y", M342), (6, 12))
    (prog,) = plan.programs
    assert prog.relabels == 1
    finished = finish_program(prog)
    pts = point_coords(prog.mesh)
    assert any(isinstance(s, Reframe) for s in finished.steps)
    relabelled = False  # between the relabel and the allpermute, steps run on the relabelled frame
    for step in finished.steps:
        if isinstance(step, Reframe):
            relabelled = True
        elif isinstance(step, Permute):
            assert relabelled and step.lead is None and len(step.pinned) == prog.mesh.size
            relabelled = False
        elif isinstance(step, Exchange):
            assert (step.pinned is not None) is relabelled
            if step.pinned is not None:
                assert len(step.pinned) == prog.mesh.size
                assert all(p.point == pts[p.slot] and len(p.reads) == len(step.members) for p in step.pinned)


def test_an_identity_frame_exchange_is_one_launch() -> None:
    prog = synthesize("[2{x}4, 4]", "[4, 4]", Mesh(x=2))
    (step,) = finish_program(prog).steps
    assert isinstance(step, Exchange) and step.pinned is None
    assert step.group == (0,) and step.members == ((0,), (1,)) and step.gathers == ((0, (0,)),)
    assert step.before == (2, 4) and step.after == (4, 4) and step.block == 16


def test_the_factor_grid_is_the_mesh_s() -> None:
    mesh = Mesh(x=4, y=3)
    grid = factor_grid(mesh)
    assert grid.shape() == tuple(f.size for f in mesh.factors) and grid.composite
    assert [grid.coords(d) for d in mesh.devices()] == [mesh.factor_coords(d) for d in mesh.devices()]
    assert factor_grid(Mesh(x=1)).shape() == (1,)


def test_moves_are_plain_hashable_data() -> None:
    moves = finish(plan_redistribution(dt.Format("xy -> x*", M24), dt.Format("xy -> *y", M24), (5, 6)))
    assert hash(moves) == hash(finish(plan_redistribution(dt.Format("xy -> x*", M24), dt.Format("xy -> *y", M24),
                                                          (5, 6))))


def test_the_moves_module_imports_nothing_above_the_format_layer() -> None:
    path = Path(__file__).resolve().parents[2] / "distal" / "redist" / "moves.py"
    imported = {node.module for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and node.module is not None}
    imported |= {a.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                 for a in node.names}
    assert {m for m in imported if m.startswith("distal")} == {"distal.format.layout"}
