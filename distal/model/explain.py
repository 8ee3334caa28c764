"""`plan.explain()`: the plan's analysis and its predicted time, as one report.

The text is assembled here, one function per section, in order: a summary
(processors used of those available, the calls the leaves run, the
predicted time against memory), `describe(plan)` (`distal.lower.describe`),
placement per tensor and how the runtime uses it, per launch who sends what
to whom (the analysis's `traffic`), totals and peak memory per processor,
the memory `run()` checks (`distal.lower.memory`), the plan's lints and
warnings, a distributed reduction's strategy and program, and the predicted
time with its parts (`predicted`: `distal.model.predict` on `model`, default
this machine, calibrated once, on the processors the run will have; the one
time `Plan.predict()` and auto's notes give). The model section's bytes per
processor are the analysis's, split as the traffic table splits them: a node
is the plan's machine's outermost level (a flat machine's processors are its
nodes).

Every figure is a field of the plan's analysis (`distal.lower.executable.analysis_of`,
`distal.lower.analysis`, where the execution-space cost model is described):
this module only words them. It sits above both the plan and the model;
`dt.Plan.explain()` calls it.

A distributed reduction into the output (`PlanBase.reduction`) is reported with
its strategy: Legate's one reduction (and why), or the synthesized program
of collectives with its lowered steps, its predicted time and the predicted
time of a single AllReduce (`distal.reduction.describe_plan`).
"""

from __future__ import annotations

from dataclasses import replace

from distal._text import bytes_text as _bytes
from distal._text import seconds_text
from distal.lower.analysis import PlanAnalysis, proc_text
from distal.lower.describe import describe, leaf_text
from distal.lower.executable import analysis_of
from distal.lower.in_place import placement_layout
from distal.lower.memory import memory_line
from distal.lower.reductions import HeldReduction
from distal.lower.task_graph import PlanBase
from distal.lower.traffic import Split
from distal.machine.level import node_size
from distal.machine.ranks import run_processors
from distal.model import calibrate
from distal.model.hardware import MachineModel, ModelError
from distal.model.predict import Prediction, predict
from distal.model.sysmem import configured_memory

__all__ = ["TABLE_LAUNCHES", "TABLE_ROWS", "default_processors", "explain", "explain_lines", "explained", "predicted",
           "summary_lines"]


def explain(plan: PlanBase, model: MachineModel | None = None) -> str:
    """`describe()` plus placement, then per launch who sends what to whom; totals, peak memory, lints and
    warnings; the predicted time on `model` (`distal.model`; default: this machine, calibrated once).

    The text is assembled here from one function per section, in order.
    """
    data = analysis_of(plan)
    found = explained(plan, model, data)
    lines = [
        *summary_lines(plan, data, found),
        describe(plan),
        *_placement_lines(plan, data),
        *_communication_lines(plan, data),
        *_total_lines(data),
        memory_line(plan, data),
        *(f"  warning: {w}" for w in data.warnings),
        *_reduction_lines(plan),
    ]
    lines.extend(explain_lines(plan, model, data, found))
    return "\n".join(lines)


def explained(plan: PlanBase, model: MachineModel | None = None,
              analysis: PlanAnalysis | None = None) -> tuple[Prediction | None, str, str]:
    """The prediction `plan.explain()` reports (`predicted`), the model's name and, when there is none, why."""
    if model is None:
        model = calibrate.this_machine()
    try:
        return predicted(plan, model, None, analysis), model.name, ""
    except ModelError as exc:
        return None, model.name, exc.message


def default_processors(plan: PlanBase, model: MachineModel) -> int | None:
    """The real processors a prediction assumes when the caller asks for none (None: one per point).

    On this machine's model, the processors the run will really have: the Legate processors of the plan's
    kind configured (`distal.host.configured_processors`, the ones `analysis_of(plan)` counts its tasks on),
    over all the run's ranks (`distal.machine.ranks.run_processors`); on a model of another machine (a
    preset), which this host does not run, one per point of the plan's machine (the text says so).
    """
    if model.name != "this-machine":
        return None
    return run_processors(plan.machine.kind if plan.machine is not None else "cpu")


def predicted(plan: PlanBase, model: MachineModel | None = None, processors: int | None = None,
              analysis: PlanAnalysis | None = None) -> Prediction:
    """The one predicted time of `plan` on `model` (default: this machine, calibrated once): what `Plan.predict()`,
    explain() and auto's notes report.

    `processors` defaults to `default_processors` (this machine's model: Legate's configured processors, the
    run that happens: its points bound to them, grouped into the tasks explain() counts; another model: one per
    point of the plan's machine); any other assumption is written into the summary (`Prediction.assumption`).
    A hierarchical machine's outer level is the model's nodes (a point of it is a node holding its inner
    grids' processors), as explain()'s traffic table splits bytes. On this machine's model the peak is compared
    with the memory Legate will have, not the host's share. Raises `ModelError` where the model cannot time it.
    """
    if model is None:
        model = calibrate.this_machine()
    if not isinstance(model, MachineModel):
        raise ModelError(f"expected a distal.model.MachineModel, but found {model!r}")
    if plan.machine is not None and plan.machine.levels > 1 and not plan.machine.params:
        per_node = node_size(plan.machine)
        if per_node is not None:
            model = model.with_(per_node=per_node)
    default = default_processors(plan, model)
    points = plan.machine.size if plan.machine is not None and not plan.machine.params else 1
    real = processors if processors is not None else default
    if real is None or (default is None and real == points):
        assumption = "one per point of the plan's machine"
    elif default is not None and real != default:
        assumption = f"processors={real} as asked; the run has Legate's {default} configured"
    elif default is None:
        assumption = f"processors={real} as asked"
    else:
        assumption = ""
    source = ""
    if model.name == "this-machine":  # compare with the memory Legate will have, not the host's share
        conf = configured_memory()
        if conf is not None:
            model = model.with_(processor=replace(model.processor, memory=max(conf.per_processor, 1)))
            source = f"{conf.source}, shared by {conf.processors} CPU processor(s)"
        else:
            source = "the calibrated host memory per core: LEGATE_CONFIG gives no --sysmem"
    if analysis is None:
        analysis = analysis_of(plan)
    got = predict(plan, model, real, analysis)
    return replace(got, memory_source=source or got.memory_source, assumption=assumption)


def explain_lines(plan: PlanBase, model: MachineModel | None = None, analysis: PlanAnalysis | None = None,
                  found: tuple[Prediction | None, str, str] | None = None) -> list[str]:
    """The lines `plan.explain()` ends with: the predicted time and its parts (`explained`, or `found`)."""
    got, name, why = found if found is not None else explained(plan, model, analysis)
    if got is None:
        return [f"  predicted time: none ({why})"]
    lines = [f"  predicted time ({name} model, distal.model): {got.summary()}"]
    lines.extend("  " + x for x in got.describe().splitlines()[1:])
    return lines


def summary_lines(plan: PlanBase, data: PlanAnalysis, found: tuple[Prediction | None, str, str]) -> list[str]:
    """explain()'s first three lines: the processors used of those available (and why any are idle), the
    calls the leaves run, the predicted time against memory."""
    got, name, why = found
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    real = got.processors_total if got is not None else data.real_processors  # the processors it was timed on
    if plan.eager:
        where = f"runs eagerly in this process with NumPy, no Legate tasks ({plan.eager})"
    else:
        used = got.processors_used if got is not None else len({plan.device_of(g, p) for g, launch in
                                                                  plan.launches() for p in launch.points()})
        where = f"runs on {used} of {real} {kind} processor(s)"
        if used < real:
            where += f"; {real - used} idle: {_idle_reason(plan, used)}"
    calls = " | ".join(leaf_text(plan, g) for g in plan.groups if g.launches) or "nothing to compute"
    if got is None:
        time = f"predicted time: none ({why})"
    else:
        fit = "fits" if got.fits else "DOES NOT FIT"
        assumed = f"; {got.assumption}" if got.assumption else ""  # processors other than the run's
        time = (f"predicted {seconds_text(got.seconds)} ({name} model{assumed}); peak memory "
                f"{_bytes(got.peak_bytes)} of {_bytes(got.memory_bytes)} per processor ({fit})")
        if plan.eager:
            time = "as Legate tasks it would be " + time
    return [f"summary: {where}", f"  calls: {calls}", f"  {time}"]


def _idle_reason(plan: PlanBase, used: int) -> str:
    chose = next((n for n in plan.notes if n.startswith("auto: chose")), None)
    if chose is not None:
        return "auto predicted the work too small to pay for spreading it (its candidates are listed below)"
    if plan.machine is None:
        return "the schedule distributes no loop (Schedule.auto, or distribute, spreads the work)"
    if plan.machine.size < used + 1:
        return f"the plan's machine {plan.machine!r} has fewer points than there are processors"
    return "some launch points have no work (see the warnings below)"


# per launch, at most this many rows of its transfers; launches past TABLE_LAUNCHES show their totals only
TABLE_ROWS = 6
TABLE_LAUNCHES = 16


def _communication_lines(plan: PlanBase, data: PlanAnalysis) -> list[str]:
    traffic = data.traffic
    lines = ["  communication (execution-space model; sender -> receiver, inside a node or between nodes by the "
             "machine's levels):"]
    for n, item in enumerate(data.launches):
        recv = ", ".join(f"{proc_text(p)} {_bytes(b)}" for p, b in item.received.items() if b) or "nothing"
        step = ", ".join(f"{k}={v}" for k, v in item.step.items())
        lines.append(f"    launch {n}{f' ({step})' if step else ''}: receives {recv}")
        lines.append(f"      {item.legate_tasks} Legate task(s) on {data.real_processors} real processor(s): "
                     f"{item.legate_tasks_why}")
        if item.received_total:
            lines.append(f"      {item.points} point(s): {_bytes(item.point_received_mean)} per point on average "
                         f"(max {_bytes(item.point_received_max)}), {_bytes(item.received_total)} in all; "
                         f"they write {_bytes(item.written_bytes)}")
        moved = traffic.of_launch(n)
        if moved:
            lines.append(f"      moves {Split.of(moved)}"
                         + (":" if n < TABLE_LAUNCHES else " (stats()['traffic'] lists every transfer)"))
            if n < TABLE_LAUNCHES:
                lines.extend("        " + row for row in traffic.table(n, TABLE_ROWS))
    after = traffic.of_launch(None)
    if after:
        lines.append(f"    once the plan ends: returns to the owners {Split.of(after)}:")
        lines.extend("        " + row for row in traffic.table(None, TABLE_ROWS))
    return lines


def _total_lines(data: PlanAnalysis) -> list[str]:
    split = data.traffic.split("read")
    lines = [f"  total received {_bytes(data.total_received_bytes)}{f' ({split})' if split.total else ''}, "
             f"reduced {_bytes(data.total_reduced_bytes)}"
             + (f", returned to owners {_bytes(data.total_returned_bytes)}" if data.total_returned_bytes else "")]
    for p, b in data.peak.items():
        lines.append(f"    processor {proc_text(p)}: placed {_bytes(data.placement.per_processor.get(p, 0))}, "
                     f"received {_bytes(data.received.get(p, 0))}, "
                     f"reduced {_bytes(data.reduced.get(p, 0))}, peak memory {_bytes(b)}")
    return lines


def _reduction_lines(plan: PlanBase) -> list[str]:
    red = plan.reduction
    if red is None:
        return []
    name = plan.tensors[red.tensor].name
    if red.synthesized:
        head = f"synthesized program of collectives over per-processor partials ({red.reason})"
    else:
        head = red.reason
    lines = [f"  distributed reduction into {name}: {head}"]
    if red.groups:
        what = "the whole output" if red.whole else "its output tile"
        lines.append(f"    partial per processor: {list(red.row)} ({what}); processors (device ids) "
                     f"reduced together: {[list(g) for g in red.groups]}")
    if red.description:
        label = "chosen program" if red.synthesized else "the program it would run"
        lines.append(f"    {label}:")
        lines.extend("      " + x for x in red.description.splitlines())
    return lines


_GATHERED_WHY = ("its tiles are not whole blocks or boxes of blocks of its format at positions linear in the "
                 "launch point")


def _runtime_text(plan: PlanBase, n: int, data: PlanAnalysis) -> str:
    """How the runtime uses formatted tensor n on Legate: in place, gathered, or per-processor partials
    ("" for a tensor it keeps as one store)."""
    info = plan.tensors[n]
    red = plan.reduction
    if red is not None and red.synthesized and n == red.tensor and placement_layout(info) is not None:
        return ("the launches write per-processor partials; the reduced result is one store, laid out by its "
                "format after")
    if isinstance(red, HeldReduction) and n == red.tensor and placement_layout(info) is not None:
        across = ", ".join(red.across) or "the steps"
        return (f"the launches add into per-processor partials held across {across}, each reduced into its tile "
                f"once per stage; the reduced result is one store, laid out by its format after")
    if info.name in data.gathered:
        if info.output and plan.zero_output:
            return (f"gathered into one store: a new one the launches write ({_GATHERED_WHY}); it is laid out by "
                    "its format after the launches")
        return (f"gathered into one store before the launches ({_GATHERED_WHY}); the plan reads that store"
                + (", and it is laid out again by its format after" if info.output else ""))
    if info.name in data.in_place:
        return f"{'written' if info.output else 'read'} in place in its device blocks"
    return ""


def _placement_lines(plan: PlanBase, data: PlanAnalysis) -> list[str]:
    """One line per tensor: where its format places it (or why no processor of the plan holds it),
    then how the runtime uses it (`_runtime_text`); `distal explain` prints the same lines."""
    lines = ["  placement (before the launches, by each tensor's format):"]
    per_tensor = data.placement.per_tensor
    for n, info in enumerate(plan.tensors):
        fmt = getattr(info.tensor, "format", None)
        if info.name in per_tensor:
            held = ", ".join(f"{proc_text(p)} {_bytes(b)}" for p, b in per_tensor[info.name].items() if b) or "nothing"
            where = f"held as {fmt}: {held}"
        else:
            size = _bytes(data.global_store_bytes.get(info.name, info.size * info.itemsize))
            if fmt is None:
                where = f"no format: one global store of {size}, held by no processor of the plan"
            else:
                on = repr(plan.machine) if plan.machine is not None else "none: one point"
                where = (f"its format {fmt} places it on {fmt.machine!r}, not on the plan's machine ({on}): no "
                         f"processor of the plan holds it, so what a launch reads of it is counted as received "
                         f"(as from one global store of {size})")
        runtime = _runtime_text(plan, n, data)
        lines.append(f"    {info.name}: " + (f"{runtime}; {where}" if runtime else where))
    return lines
