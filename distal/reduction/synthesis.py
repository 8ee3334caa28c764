"""Syntax-guided enumeration of reduction programs (section 3.5).

Programs are enumerated in increasing size up to `max_size` (the paper uses
5). Each step is a `(slice, form, C)` over the synthesis hierarchy; steps whose
`(slice, form)` derive the same device groups as an earlier one are the same
lowered step and are generated once (the first spelling in the order slice
outer-to-inner, InsideGroup, Parallel(e), Master(e) with e outer-to-inner), and
steps whose groups are all single devices are not reductions. A step must be
valid under Figure 8; a program is kept when it reaches the final state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from distal.errors import ReductionError
from distal.reduction.language import CollectiveKind, Form, ReductionProgram, ReductionStep
from distal.reduction.parallelism import SynthesisHierarchy
from distal.reduction.semantics import Groups, State, apply_step, final_state, groups, initial_state

__all__ = ["Synthesis", "candidate_steps", "synthesize_programs"]


def candidate_steps(hierarchy: SynthesisHierarchy) -> tuple[tuple[ReductionStep, Groups], ...]:
    """Every `(slice, form)` with distinct, non-trivial groups (collective AllReduce).

    >>> h = SynthesisHierarchy(("node", "gpu"), (2, 16), (0, 1))
    >>> [str(s.slice) + " " + str(s.form) for s, _ in candidate_steps(h)]
    ['root InsideGroup', 'node InsideGroup', 'node Parallel(root)', 'node Master(root)']
    """
    names = hierarchy.all_names
    seen: set[Groups] = set()
    out = []
    for s, sl in enumerate(names):
        forms = [Form("InsideGroup")]
        forms += [Form("Parallel", names[e]) for e in range(s)]
        forms += [Form("Master", names[e]) for e in range(s)]
        for form in forms:
            step = ReductionStep(sl, form, CollectiveKind.ALL_REDUCE)
            g = groups(hierarchy, step)
            if all(len(x) == 1 for x in g) or g in seen:
                continue
            seen.add(g)
            out.append((step, g))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Synthesis:
    """The programs synthesized for one hierarchy, smallest first, and the time taken."""

    hierarchy: SynthesisHierarchy
    programs: tuple[ReductionProgram, ...]
    seconds: float
    max_size: int

    def __len__(self) -> int:
        return len(self.programs)

    def __repr__(self) -> str:
        n = len(self.programs)
        return (f"<Synthesis of {n} program{'' if n == 1 else 's'} for {self.hierarchy} "
                f"(at most {self.max_size} steps each, {self.seconds:.3f} s)>")


def synthesize_programs(
    hierarchy: SynthesisHierarchy, max_size: int = 5, strict_broadcast: bool = False
) -> Synthesis:
    """All semantically valid programs of at most `max_size` steps that reduce fully.

    `strict_broadcast` requires every receiver of a Broadcast to gain data (a
    stricter reading of Figure 8, see docs/reduction.md).

    >>> h = SynthesisHierarchy(("gpu",), (4,), (1,))
    >>> [p.shape for p in synthesize_programs(h).programs]
    ['AllReduce', 'ReduceScatter-AllGather', 'Reduce-Broadcast']
    """
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ReductionError(f"expected a positive program size limit, but found {max_size!r}")
    start = time.perf_counter()
    k = hierarchy.size
    if k == 1:
        return Synthesis(hierarchy, (ReductionProgram(()),), time.perf_counter() - start, max_size)
    cands = candidate_steps(hierarchy)
    moves = [
        (ReductionStep(step.slice, step.form, c), g) for c in CollectiveKind for step, g in cands
    ]
    goal = final_state(k)
    memo: dict[tuple[State, int], list[tuple[int, ...]]] = {}

    def completions(state: State, budget: int) -> list[tuple[int, ...]]:
        key = (state, budget)
        hit = memo.get(key)
        if hit is not None:
            return hit
        found: list[tuple[int, ...]] = []
        if budget > 0:
            for idx, (step, g) in enumerate(moves):
                nxt = apply_step(state, g, step.collective, strict_broadcast)
                if isinstance(nxt, str):
                    continue
                if nxt == goal:
                    found.append((idx,))
                else:
                    found.extend((idx, *rest) for rest in completions(nxt, budget - 1))
        memo[key] = found
        return found

    seqs = completions(initial_state(k), max_size)
    seqs.sort(key=lambda s: (len(s), s))
    programs = tuple(ReductionProgram(tuple(moves[i][0] for i in seq)) for seq in seqs)
    return Synthesis(hierarchy, programs, time.perf_counter() - start, max_size)
