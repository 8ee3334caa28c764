"""Test helper: plan, finish and run a redistribution of data held on Legate (what `Tensor.redistribute` does)."""

from __future__ import annotations

from distal.format.format import Format
from distal.redist.finish import finish
from distal.redist.formats import FormatProgram, plan_redistribution
from distal.runtime._redistribute import StepRecord, run_plan_steps
from distal.runtime._tensor_storage import FormatStore


def redistribute(held: FormatStore, fmt: Format, method: str = "search",
                 trace: list[StepRecord] | None = None) -> tuple[FormatStore, FormatProgram]:
    """Move data held in one format to format ``fmt`` (same machine) on Legate; the data and the plan."""
    plan = plan_redistribution(held.format, fmt, held.shape, method)
    return run_plan_steps(finish(plan), held, trace), plan
