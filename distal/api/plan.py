"""The user's plan: `dt.Plan`, the lowered schedule with the methods that run, analyse, predict, explain and draw it.

`Schedule.compile()` returns a `Plan`: the data of `distal.lower.task_graph.PlanBase`
(what lowering makes), with methods that call down into the layers that
answer them: the executors (`distal.lower.numpy_exec`, `distal.lower.eager`,
`distal.runtime`), the analysis (`distal.lower.executable.analysis_of`), the
time model (`distal.model`), the text (`distal.lower.describe`,
`distal.model.explain`) and the picture (`distal.lower.plan_picture`).
Below this layer, code calls those functions on a `PlanBase`.

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> plan = A.schedule().compile()
>>> plan.stats()["legate_task_count"]
1
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from distal import model as time_model
from distal.api._threads import legate_section
from distal.errors import DistalError
from distal.format.picture import png_data_uri, save
from distal.lower.describe import describe
from distal.lower.eager import run_eager
from distal.lower.executable import analysis_of
from distal.lower.numpy_exec import run_numpy
from distal.lower.plan_picture import figure
from distal.lower.task_graph import PlanBase
from distal.model.explain import explain, predicted

if TYPE_CHECKING:
    from pathlib import Path

    from distal.lower.analysis import PlanAnalysis
    from distal.model.hardware import MachineModel
    from distal.model.predict import Prediction
    from distal.notation.tensor_base import TensorBase

__all__ = ["Plan"]


class Plan(PlanBase):
    """A lowered schedule (`PlanBase`'s data) as the user holds it: run it, analyse it, predict and explain it.

    Built from the data lowering makes with `Plan.of(base)`; `dataclasses.replace` keeps the class.
    """

    __slots__ = ()

    @classmethod
    def of(cls, base: PlanBase) -> Plan:
        """The plan `base` (its fields, shared) as the user's `Plan`; `base` itself when it is one already."""
        if isinstance(base, cls):
            return base
        return cls(**{f.name: getattr(base, f.name) for f in fields(base)})

    # -- running -----------------------------------------------------------------

    def run(self, backend: str = "legate") -> TensorBase:
        """Execute the plan; the output tensor (the user's `dt.Tensor`) then holds the result.

        backend="legate" runs on Legate through `distal.runtime`, or, for a
        plan `Schedule.auto` chose to run eagerly (`eager` says why), in this
        process with NumPy on the tensors' own arrays (`distal.lower.eager`);
        backend="numpy" runs every launch point by point in this process.
        """
        with legate_section():
            if backend == "numpy":
                run_numpy(self)
            elif backend == "legate" and self.eager:
                run_eager(self)
            elif backend == "legate":
                from distal.runtime import run_plan  # Legate is imported only when a plan runs on it

                run_plan(self)
            else:
                raise DistalError(f"expected backend 'legate' or 'numpy', but found {backend!r}")
            return self.tensor(self.output)

    # -- reporting ---------------------------------------------------------------

    def analysis(self) -> PlanAnalysis:
        """The plan under the execution-space cost model, as a frozen, typed value (`distal.lower.analysis`).

        Computed once per plan (and per Legate processor count and task
        grouping configured, which its task counts read from the environment):
        `distal.lower.executable.analysis_of`.
        """
        with legate_section():
            return analysis_of(self)

    def stats(self) -> dict[str, Any]:
        """Per launch and per processor: tiles, bytes received, totals, peak memory (as data).

        The documented dict (docs/reference.md) of `analysis()`: `self.analysis().as_dict()`.
        """
        return self.analysis().as_dict()

    def predict(self, model: MachineModel | None = None, processors: int | None = None) -> Prediction:
        """The predicted time on a machine model (`distal.model.predict`; default: this machine, calibrated):
        the one explain() reports and auto's notes give (`distal.model.explain.predicted`).

        `processors` is the number of real processors (default: on this machine's model the Legate
        processors configured, the run that happens; on a model of another machine one per point of the
        plan's machine; points outnumbering processors run several each, block-wise). Another count is
        written into the summary.
        """
        with legate_section():
            return predicted(self, model if model is not None else time_model.this_machine(), processors)

    def explain(self, model: MachineModel | None = None) -> str:
        """A readable report of `analysis()` and the predicted time on `model` (`distal.model.explain`)."""
        with legate_section():
            return explain(self, model)

    def __str__(self) -> str:
        """Every launch with its operands (`distal.lower.describe`)."""
        return describe(self)

    def picture(self, path: str | Path | None = None, *, steps: int = 4, title: str | None = None) -> Any:
        """The plan's launches over its machine, as a matplotlib `Figure`; also written as a PNG to `path`.

        One panel per step (the first `steps`; a note counts the rest): every
        processor of the machine is a box listing the tiles its launch points
        read and write in that step, and where a tile read comes from when
        the processor does not hold it (`distal.lower.plan_picture`). Needs
        matplotlib (`pip install 'distal[docs]'`); without it, a `DistalError`
        says how to install it.
        """
        fig = figure(self, steps=steps, title=title)
        if path is not None:
            save(fig, path)
        return fig

    def _repr_html_(self) -> str:
        """Notebook display: the plan's description, its picture and a picture of each distributed tensor's format."""
        parts = [f"<pre>{html.escape(str(self))}</pre>"]
        try:
            if self.machine is not None and not self.machine.params and self.machine.size > 16:
                raise DistalError("a machine this large is drawn only when asked: plan.picture()")
            buffer = io.BytesIO()
            self.picture().savefig(buffer, format="png")
        except DistalError:  # no matplotlib, or a machine that is not drawn: the text says it all
            pass
        else:
            picture = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
            parts.append(f'<img src="{picture}" alt="the launches of the plan"/>')
        for info in self.tensors:
            fmt = info.tensor.format
            if fmt is None:
                continue
            uri = png_data_uri(fmt, info.shape, title=f"{info.name}: {fmt}")
            if uri is not None:
                parts.append(f'<img src="{uri}" alt="{html.escape(info.name)}: {html.escape(str(fmt))}"/>')
        return "\n".join(parts)
