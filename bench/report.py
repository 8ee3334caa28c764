"""Markdown tables from bench/results/*.json, for docs/benchmarks.md.

Run: `python bench/report.py` (prints Markdown).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def suite_tables(d: dict[str, Any]) -> list[str]:
    out = []
    m = d["machine"]
    out.append(f"Machine: {m['cores']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Python {m['python']}, "
               f"legate {m['versions'].get('legate')}, cupynumeric {m['versions'].get('cupynumeric')}; "
               f"recorded {d['recorded']}; median of {d['repeats']} runs after one warm-up.")
    out.append("")
    for n in d["sizes"]:
        out.append(f"### float64 matmul, n = {n} (GFLOP/s; seconds in parentheses)")
        out.append("")
        out.append("| processors | numpy (2 BLAS threads) | cupynumeric | " + " | ".join(MATMUL) + " |")
        out.append("|---|---|---|" + "---|" * len(MATMUL))
        np_s = d["numpy"]["matmul"][str(n)]
        for p in d["procs"]:
            row = d["legate"][str(p)]["matmul"][str(n)]

            def cell(s: float, n: int = n) -> str:
                return f"{2 * n**3 / s / 1e9:.1f} ({s:.3f})"

            out.append(f"| {p} | {cell(np_s)} | {cell(row['cupynumeric'])} | "
                       + " | ".join(cell(row[a]) for a in MATMUL) + " |")
        out.append("")
        for p in d["procs"]:
            row = d["legate"][str(p)]["matmul"][str(n)]
            grids = "; ".join(f"{a} {row[a + '_machine'].removeprefix('Machine(Grid').removesuffix(')')}"
                              for a in MATMUL)
            out.append(f"- grids at p={p}: {grids}")
        out.append("")
    out.append("### Higher-order kernels, 2 CPU processors")
    out.append("")
    out.append("| kernel | size (n, l) | numpy.einsum s | cupynumeric.einsum s | distal s | distal vs cupynumeric "
               "| distal vs numpy | distal rate |")
    out.append("|---|---|---|---|---|---|---|---|")
    for name, info in d["higher"].items():
        n, l = info["size"]
        row = d["legate"]["2"]["higher"][name]
        np_s = d["numpy"]["higher"][name]
        unit = "GB/s" if name in ("ttv", "innerprod") else "GFLOP/s"
        work = {"ttv": 8.0 * (n**3 + n), "innerprod": 16.0 * n**3, "ttm": 2.0 * n**3 * l,
                "mttkrp": 3.0 * n**3 * l}[name]
        out.append(f"| {name} | ({n}, {l}) | {np_s:.3f} | {row['cupynumeric']:.3f} | {row['distal']:.3f} | "
                   f"{row['cupynumeric'] / row['distal']:.2f}x | {np_s / row['distal']:.2f}x | "
                   f"{work / row['distal'] / 1e9:.1f} {unit} |")
    out.append("")
    return out


def main() -> int:
    d = _load("suite")
    if d is not None:
        print("\n".join(suite_tables(d)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
