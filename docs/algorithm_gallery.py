"""Write the algorithm gallery: docs/algorithms.md (index) and docs/algorithms/<name>.md.

Each page gives the algorithm's statement, machine, formats, schedule (as
replayable Python and as concrete index notation), its communication picture
(docs/img/algorithm_<name>.png, from docs/algorithm_pictures.py), the
communication its plan reports, and its measured figures from
bench/results/suite.json.

Run: `python docs/algorithm_gallery.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import distal as dt
from distal import kernels

DOCS = Path(__file__).resolve().parent
SUITE = DOCS.parent / "bench" / "results" / "suite.json"

CASES: dict[str, tuple[tuple[int, ...], list[tuple[int, ...]], str]] = {
    "summa": ((3, 3), [(12, 12)] * 3, "ABC"),
    "cannon": ((3, 3), [(12, 12)] * 3, "ABC"),
    "pumma": ((3, 3), [(12, 12)] * 3, "ABC"),
    "johnson": ((2, 2, 2), [(8, 8)] * 3, "ABC"),
    "solomonik": ((2, 2, 2), [(8, 8)] * 3, "ABC"),
    "cosma": ((2, 2, 2), [(8, 8)] * 3, "ABC"),
    "ttv": ((2, 2), [(8, 8), (8, 8, 8), (8,)], "ABc"),
    "innerprod": ((4,), [(), (8, 8, 8), (8, 8, 8)], "aBC"),
    "ttm": ((4,), [(8, 8, 8), (8, 8, 8), (8, 8)], "ABC"),
    "mttkrp": ((2, 2, 2), [(8, 8), (8, 8, 8), (8, 8), (8, 8)], "ABCD"),
}

ANALYTIC = {
    "summa": "2 (g-1) (n/g)^2 * 8 bytes received per processor on a g x g grid; nothing reduced",
    "cannon": "2 (g-1) (n/g)^2 * 8 bytes received per processor on a g x g grid (initial skew included)",
    "pumma": "2 (g-1) (n/g)^2 * 8 bytes received per processor on a g x g grid",
    "johnson": "(n/c)^2 * 8 * ([y != 0] + [x != 0]) bytes received and (n/c)^2 * 8 * [z != 0] reduced "
               "at processor (x, y, z) of a c x c x c grid",
}


def measured(name: str, suite: dict[str, Any] | None) -> list[str]:
    if suite is None:
        return ["Not measured yet (run `python bench/suite.py`)."]
    lines = []
    if name in suite["legate"]["2"]["matmul"].get(str(suite["sizes"][0]), {}):
        lines.append("| n | processors | seconds | GFLOP/s | vs cupynumeric (same processors) | vs numpy (2 threads) |")
        lines.append("|---|---|---|---|---|---|")
        for n in suite["sizes"]:
            for p in suite["procs"]:
                row = suite["legate"][str(p)]["matmul"][str(n)]
                s = row[name]
                lines.append(f"| {n} | {p} ({row[name + '_machine']}) | {s:.3f} | {2 * n**3 / s / 1e9:.1f} | "
                             f"{row['cupynumeric'] / s:.2f}x | {suite['numpy']['matmul'][str(n)] / s:.2f}x |")
    elif name in suite["higher"]:
        n, l = suite["higher"][name]["size"]
        row = suite["legate"]["2"]["higher"][name]
        lines.append(f"On 2 CPU processors at size (n, l) = ({n}, {l}): distal {row['distal']:.3f} s, "
                     f"cupynumeric.einsum {row['cupynumeric']:.3f} s "
                     f"({row['cupynumeric'] / row['distal']:.2f}x), numpy.einsum "
                     f"{suite['numpy']['higher'][name]:.3f} s ({suite['numpy']['higher'][name] / row['distal']:.2f}x).")
    lines.append("")
    lines.append(f"From `bench/results/suite.json` ({suite['recorded']}); see [benchmarks](../benchmarks.md).")
    return lines


def page(name: str, suite: dict[str, Any] | None) -> str:
    grid, shapes, letters = CASES[name]
    ops = [dt.Tensor(x, s) for x, s in zip(letters, shapes)]
    machine = dt.Machine(dt.Grid(*grid))
    sched = kernels.build(name, machine, *ops)
    alg = kernels.ALGORITHMS[name]
    stats = sched.compile().stats()
    recv, red, peak = stats["received_bytes"], stats["reduced_bytes"], stats["peak_bytes"]
    formats = ", ".join(f"`{t.name}: {t.format}`" if t.format is not None else f"`{t.name}`: not distributed"
                        for t in ops)
    out = [f"# {name}", "", alg.summary + ".", "",
           f"Statement: `{ops[0].assignment}`", "",
           f"Machine for p processors: `dt.kernels.machine({name!r}, p)`"
           + (" (two-level machines too: a grid of nodes of processor grids)" if alg.hierarchical else "")
           + f"; for p = {machine.size}: `{kernels.machine(name, machine.size, (12, 12, 12))!r}`.", "",
           f"Formats: {formats}", "",
           "Schedule (`dt.kernels.build` applies it; this is its trace):", "", "```python", sched.trace_text(), "```",
           "", "Concrete index notation:", "", "```", str(sched), "```", ""]
    if (DOCS / "img" / f"algorithm_{name}.png").is_file():
        out += [f"![{name}: tiles fetched per step](../img/algorithm_{name}.png)", ""]
    out += ["## Communication", ""]
    if name in ANALYTIC:
        out += [f"Analytically: {ANALYTIC[name]} (checked against `plan.stats()` by tests/kernels/test_legate.py).",
                ""]
    out += [f"On `{machine!r}` with operand shapes {', '.join(str(s) for s in shapes)}, `plan.stats()` reports at "
            f"most {max(recv.values(), default=0)} bytes received, {max(red.values(), default=0)} reduced and "
            f"{max(peak.values(), default=0)} bytes of peak memory per processor.", "",
            "## Measured", "", *measured(name, suite), ""]
    return "\n".join(out)


def main() -> int:
    suite = json.loads(SUITE.read_text()) if SUITE.is_file() else None
    (DOCS / "algorithms").mkdir(exist_ok=True)
    index = ["# Algorithm gallery", "",
             "distal's library (`dt.kernels`) holds the algorithms of the paper's Figure 9 and section 7.2 as a",
             "target machine, a format for every operand and a schedule. `dt.kernels.build(name, machine,",
             "*operands)` sets the statement, places the operands (redistributing those in another format with",
             "synthesized collectives; the schedule's notes and `plan.explain()` say so) and returns the schedule;",
             '`dt.kernels.machine(name, p, shape)` picks a machine for any processor count that keeps every processor',
             "busy (Johnson's cube and Solomonik's layered square are over-decomposed on other counts, their grid",
             'points bound block-wise to the processors as in paper 7.1.2; its docstring says what it picks and why);',
             '`dt.kernels.build("auto", machine, *operands)` compiles every fitting algorithm and variant, predicts',
             "each plan's time on a machine model (`distal.model`: this machine, calibrated, by default; `model=`",
             'for the Lassen or DGX A100 presets) and keeps the fastest whose peak memory fits (`memory=` bytes per',
             "processor, else the model's); its notes list every candidate with its predicted time, bytes and peak",
             "memory. `build` refuses an output whose statement is not the algorithm's (up to renaming index",
             'variables) and operands out of order. TTM distributes i only (paper 7.2.2): nothing moves.', "",
             "Pictures come from each algorithm's compiled plan (`docs/algorithm_pictures.py`): arrows run to each",
             "processor from the processor holding a tile it reads at that step (A black, B blue, C red).", "",
             "| algorithm | what |", "|---|---|"]
    for name in kernels.names():
        (DOCS / "algorithms" / f"{name}.md").write_text(page(name, suite))
        index.append(f"| [{name}](algorithms/{name}.md) | {kernels.ALGORITHMS[name].summary} |")
    index += ["", "Measured figures for all of them: [benchmarks.md](benchmarks.md).", ""]
    (DOCS / "algorithms.md").write_text("\n".join(index))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
