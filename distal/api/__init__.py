"""The objects users hold, on top of every other layer: `Tensor`, `Schedule`, `Plan`, `einsum`.

Each derives from (or makes) the data classes below it and adds the methods
that call down into the layers that answer them (TACO's `Tensor` above its
IR; JAX's stages): `Tensor` (`distal.notation.tensor_base.TensorBase`) adds
`schedule()`, `from_array`, `place`, `redistribute`, `to_numpy`;
`Schedule` (`distal.schedule.commands.ScheduleBase`) adds `compile()`,
`evaluate()`, `auto()`; `Plan` (`distal.lower.task_graph.PlanBase`) adds `run()`,
`predict()`, `explain()`, `stats()`, `picture()`; `distal.api.einsum`'s
`einsum` and `einsum_plan` write and run a statement chosen by the auto
search (the module keeps its name here: `distal.api.einsum.clear_cache()`).
The facade (`import distal as dt`) re-exports them.

A `Tensor` acts as a NumPy array (`distal.api._array`: NEP 13/18, operators,
indexing that reads data); every method here that can touch Legate runs in
`distal.api._threads.legate_section()`, so any Python thread may call them.
"""

from distal.api import _array
from distal.api import einsum as _einsum  # the module: `distal.api.einsum` stays the module (clear_cache())
from distal.api.plan import Plan
from distal.api.schedule import Schedule
from distal.api.tensor import Tensor

_array.use_einsum(_einsum.einsum)  # what np.einsum and @ on a dt.Tensor run (`distal.api._array`)

__all__ = ["Plan", "Schedule", "Tensor"]
