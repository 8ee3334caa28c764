"""Markdown tables from bench/results/*.json, for docs/benchmarks.md.

Run: `python bench/report.py [--results DIR]` (prints Markdown): suite.json's tables, and
suite_interleaved.json's (the issue's targets: the higher-order kernels with NumPy's time of each size,
check's baseline, the matmul sweep).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]


def _load(name: str, folder: Path = RESULTS) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
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


def interleaved_tables(d: dict[str, Any]) -> list[str]:
    """The tables of suite_interleaved.json: the higher-order kernels (with NumPy's time against the 0.1 s
    condition and how each size was chosen), check's baseline, and the matmul sweep."""
    m = d["machine"]
    out = [f"Machine: {m['cores']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Python {m['python']}, "
           f"legate {m['versions'].get('legate')}, cupynumeric {m['versions'].get('cupynumeric')}; "
           f"recorded {d['recorded']}; load average after {', '.join(f'{x:.1f}' for x in d['loadavg_after'])}; "
           f"{d['seconds_total']:.0f} s in all.", ""]
    higher = d.get("higher") or {}
    if higher.get("seconds"):
        out += [f"Higher-order kernels: {higher.get('method', '')}", "",
                "| kernel | size (n, l) | numpy.einsum s | >= 0.1 s | distal s | cupynumeric.einsum s | vs numpy "
                "| vs cuPyNumeric | size chosen by | max rel. error vs numpy |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        sec, ratios = higher["seconds"], higher["ratios"]
        for name, (n, l) in d["higher_sizes"].items():
            sizing = higher.get("sizing", {}).get(name, {})
            chosen = ("memory" if sizing.get("capped_by_memory") else
                      f"calibration ({sizing['calibration_numpy_s']:.2g} s at n = {sizing['calibration_size'][0]})"
                      if sizing else "fixed")
            errors = higher.get("max_rel_error_vs_numpy", {}).get(name, {})
            flag = {k: "yes" if v else "no" for k, v in higher.get("numpy_at_least_0_1s", {}).items()}
            err = f"{max(errors.values()):.1e}" if errors else "-"
            out.append(f"| {name} | ({n}, {l}) | {sec[f'{name}:numpy']:.3f} | "
                       f"{flag.get(name, '?')} | {sec[f'{name}:distal']:.3f} | "
                       f"{sec[f'{name}:cupynumeric']:.3f} | {ratios[f'{name}_vs_numpy']:.2f}x | "
                       f"{ratios[f'{name}_vs_cupynumeric']:.2f}x | {chosen} | {err} |")
        out.append("")
    check = d.get("check")
    if check:
        sizes = ", ".join(f"{k} {tuple(v)}" for k, v in check["sizes"].items())
        out += [f"`distal bench check`'s baseline ({sizes}; median of {check['rounds']} rounds): "
                + ", ".join(f"{k} {v:.2f}x" for k, v in check["ratios"].items()), ""]
    sweep = d.get("matmul") or {}
    if sweep:
        out += ["| matmul n | best distal (s) | numpy (s) | cuPyNumeric (s) | best vs numpy | best vs cuPyNumeric "
                "| auto / best |", "|---|---|---|---|---|---|---|"]
        for n in sorted(sweep, key=int):
            row = sweep[n]
            secs = row["seconds"]
            best = row["best"]
            out.append(f"| {n} | {best} {secs[best]:.4f} | {secs['numpy']:.4f} | {secs['cupynumeric']:.4f} | "
                       f"{row['vs_numpy']:.2f}x | {row['vs_cupynumeric']:.2f}x | {secs['auto'] / secs[best]:.2f} |")
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the results (default bench/results)")
    args = parser.parse_args(argv)
    d = _load("suite", args.results)
    if d is not None:
        print("\n".join(suite_tables(d)))
    d = _load("suite_interleaved", args.results)
    if d is not None:
        print("## bench/suite.py --interleaved\n")
        print("\n".join(interleaved_tables(d)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
