"""Markdown tables from the benchmark records (bench/results), for docs/benchmarks.md.

Run: `python bench/report.py [--results DIR]` (prints Markdown): the newest `suite` record's tables, and
for each kind of CPU the newest `suite_interleaved` record's (the issue's targets: the higher-order kernels
at each NumPy time aimed at, with NumPy's time of each size, check's baseline, the matmul sweep), each with
its CPU and the BLAS kernels each system ran.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # _common, also when loaded by path
RESULTS = HERE / "results"
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]


def _load(name: str, folder: Path = RESULTS) -> dict[str, Any] | None:
    """The newest record of `name` (dated folders, history.json), else a flat `name`.json of the folder."""
    import _common

    found = _common.find(name, folder=folder)
    if found is not None:
        return found[1]
    from _common.results import read_record  # a cached record only where the private-directory rule allows

    return read_record(folder / f"{name}.json", folder)


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


def _blas_line(blas: dict[str, Any]) -> str:
    """The BLAS kernels each system ran (a record's per-system `blas` section), as one line."""
    parts = []
    for system, libs in blas.items():
        if isinstance(libs, dict) and libs:
            parts.append(f"{system}: " + "; ".join(f"{k} {v}" for k, v in libs.items()))
    return " | ".join(parts)


def interleaved_tables(d: dict[str, Any]) -> list[str]:
    """The tables of a suite_interleaved record: the higher-order kernels at each NumPy time aimed at (with
    NumPy's time against the 0.1 s condition and how each size was chosen), check's baseline, and the matmul
    sweep; the CPU and the BLAS kernels each system ran."""
    import _common

    m = d["machine"]
    out = [f"Machine: {m['cores']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Python {m['python']}, "
           f"legate {m['versions'].get('legate')}, cupynumeric {m['versions'].get('cupynumeric')}; "
           f"CPU: {_common.cpu_kind(m) or 'not recorded'}; recorded {d['recorded']}"
           + (f" at commit {d['commit']}" if d.get("commit") else "")
           + f"; load average after {', '.join(f'{x:.1f}' for x in d['loadavg_after'])}; "
           f"{d['seconds_total']:.0f} s in all.", ""]
    targets = d.get("higher_targets") or {"": {"higher": d.get("higher") or {}, "higher_sizes": d.get("higher_sizes")}}
    for target, part in targets.items():
        out += _higher_table(part["higher"], part["higher_sizes"] or {}, target)
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
        blas = {f"matmul n={n}": row["blas"] for n, row in sweep.items() if row.get("blas")}
        if blas:
            out += [f"BLAS kernels run (the matmul children: NumPy, cuPyNumeric and distal in one process): "
                    f"{_blas_line(dict(list(blas.items())[:1]))}", ""]
    return out


def _higher_table(higher: dict[str, Any], higher_sizes: dict[str, Any], target: str) -> list[str]:
    out: list[str] = []
    if higher.get("seconds"):
        aim = f" (sizes where NumPy takes about {target} s)" if target else ""
        out += [f"Higher-order kernels{aim}: {higher.get('method', '')}", "",
                "| kernel | size (n, l) | numpy.einsum s | >= 0.1 s | distal s | cupynumeric.einsum s | vs numpy "
                "| vs cuPyNumeric | size chosen by | max rel. error vs numpy |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        sec, ratios = higher["seconds"], higher["ratios"]
        for name, (n, l) in higher_sizes.items():
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
        if higher.get("blas"):
            out += [f"BLAS kernels each system ran: {_blas_line(higher['blas'])}", ""]
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the results (default bench/results)")
    args = parser.parse_args(argv)
    d = _load("suite", args.results)
    if d is not None:
        print("\n".join(suite_tables(d)))
    import _common

    seen: set[str | None] = set()
    for where, d in _common.records("suite_interleaved", args.results):
        kind = _common.cpu_kind(d.get("machine"))
        if kind in seen:
            continue  # the newest record of each kind of CPU
        seen.add(kind)
        print(f"## bench/suite.py --interleaved on {kind or 'a CPU not recorded'}\n\n(`{where}`)\n")
        print("\n".join(interleaved_tables(d)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
