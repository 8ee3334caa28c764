"""distal's generic Python task, one registered variant per arity.

Legate checks the number of inputs, outputs and reductions of a launch
against the signature its Python task was registered with, so a task taking
"any number of stores" does not exist. distal registers, on first use, one
task per triple (inputs, outputs, reductions); each receives every store, the
kernel key and a layout string, and calls the kernel with the tiles in the
order the launch listed its arguments.

The layout lists one slot per kernel argument: `i3` is the fourth input,
`o0` the first output, `r1` the second reduction. A read-write argument is
an input and an output of the same store; its slot is the output's. After a
`;` the layout may carry the launch point of a single-point launch (Legate
reports point 0 for those): `i0,o0;2,1`.

Every task has a CPU, an OpenMP and a GPU variant with the same body. On CPU
and OpenMP processors the tiles are NumPy views of the stores; on a GPU
they are CuPy views of the framebuffer (through the CUDA array interface)
and the kernel runs with CuPy's current stream set to the task's stream,
so its work is ordered with Legate's.

The task is called with Legate's task context alone (`_Direct`, a variant
invoker that skips Legate's conversion of every store and scalar into the
body's keyword arguments): the body reads its stores from the context's
inputs, outputs and reductions by the layout's slots. The registered
signature still states the arity, which Legate checks at submission. A
launch of two tasks ran about 85 us faster (median of 500 alternating
launches, bench/breakdown.py's machine).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._observe import observers
from ._registry import kernel, record_failure
from ._start import ensure_started

__all__ = ["generic_task"]

_lock = threading.Lock()
_tasks: dict[tuple[int, int, int], Any] = {}


ArgSlots = tuple[tuple[tuple[int, int], ...], tuple[int, ...] | None, bool]
"""A task's argument layout string, parsed: the kernel's argument slots as (0 input, 1 output, 2 reduction;
index), a pinned launch's point (or None), whether only point 0 runs."""
_KINDS = {"i": 0, "o": 1, "r": 2}

_layouts: dict[str, ArgSlots] = {}


def _layout(text: str) -> ArgSlots:
    """`text` parsed (once per distinct layout string; launches of a plan repeat theirs)."""
    found = _layouts.get(text)
    if found is None:
        layout, marker, pinned = text.partition(";")
        slots = tuple((_KINDS[slot[0]], int(slot[1:])) for slot in layout.split(",")) if layout else ()
        point: tuple[int, ...] | None = None
        first_only = False
        if marker:
            pinned, first, _ = pinned.partition(";")
            first_only = bool(first)
            point = tuple(int(x) for x in pinned.split(",") if x)
        found = _layouts[text] = (slots, point, first_only)
    return found


def _run(ctx: Any) -> None:
    """The body of every generic task (under an `observed` task wrapper, if any)."""
    watch = observers.task
    if watch is not None:
        watch(lambda: _body(ctx))
    else:
        _body(ctx)


def _body(ctx: Any) -> None:
    """The kernel called with the tiles of the launch's stores."""
    scalars = ctx.scalars
    key = int(scalars[0].value())
    slots, point, first_only = _layout(str(scalars[1].value()))
    if point is None:
        point = tuple([int(x) for x in ctx.task_index])
    elif first_only and any([int(x) for x in ctx.task_index]):
        return  # a pinned launch's second point, on empty tiles (_launch._pinned_args)
    try:
        arrays = (ctx.inputs, ctx.outputs, ctx.reductions)
        stores = [arrays[kind][n].data() for kind, n in slots]
        if _is_gpu_variant(ctx):
            with device_scope(ctx) as view:
                kernel(key)[1](point, *[view(store) for store in stores])
                if any(kind == 2 for kind, _ in slots):
                    _settle()
        else:  # CPU and OpenMP processors: NumPy views of the stores, no device scope
            asarray = np.asarray
            kernel(key)[1](point, *[asarray(store) for store in stores])
    except BaseException as error:  # an escaping exception would abort the process
        record_failure(key, point, error)


_gpu_kinds: dict[Any, bool] = {}


def _is_gpu_variant(ctx: Any) -> bool:
    """Whether this is the GPU variant (`get_variant_kind` gives a VariantCode, or its integer); answered
    once per kind."""
    kind = ctx.get_variant_kind()
    found = _gpu_kinds.get(kind)
    if found is None:
        name = getattr(kind, "name", None)
        if name is not None:
            found = bool(name == "GPU")
        else:
            from legate.core import VariantCode

            found = int(kind) == int(VariantCode.GPU)
        _gpu_kinds[kind] = found
    return found


def _device_module() -> Any:
    import cupy

    return cupy


@contextlib.contextmanager
def device_scope(ctx: Any) -> Iterator[Callable[[Any], Any]]:
    """How this task views its stores: `np.asarray`, or on a GPU `cupy.asarray` on the task's stream."""
    if not _is_gpu_variant(ctx):
        yield np.asarray
        return
    cupy = _device_module()
    stream = ctx.task_stream
    if stream is None:
        yield cupy.asarray
        return
    with cupy.cuda.ExternalStream(int(stream)):
        yield cupy.asarray


def _settle() -> None:
    """Wait for this task's work on its stream (the current one inside `device_scope`).

    Legate may give the tasks of one GPU one reduction instance, whose
    contributions must then be atomic. A kernel's `out += tile` on CuPy is a
    read, an add and a write: two tasks whose kernels overlap on the GPU
    (each task's body returns once its work is queued, and the next task's
    kernel starts on another stream) lose one of the two sums. The GPU run
    of tests/lower/test_legate_differential.py saw exactly that: k reduced
    over Grid(3, kind="gpu") on one GPU, half of the output missing one
    point's partial. Waiting before the body returns orders the tasks'
    additions, as the CPU's one-task-at-a-time processors do.
    """
    _device_module().cuda.get_current_stream().synchronize()


_invoker: list[Any] = []  # the `_Direct` class, made on first use (it derives from Legate's invoker)


def _direct(body: Any) -> Any:
    """A variant invoker for `body` that calls `_run` with the task context alone."""
    if not _invoker:
        from legate.core._ext.task.invoker import VariantInvoker

        class _Direct(VariantInvoker):  # type: ignore[misc]  # Legate's Cython class
            """Calls the generic task with its context, without making keyword arguments of its stores."""

            def __call__(self, ctx: Any, func: Any) -> None:
                _run(ctx)

        _invoker.append(_Direct)
    return _invoker[0](body)


def _make(inputs: int, outputs: int, reductions: int) -> Any:
    from legate.core import TaskContext, VariantCode
    from legate.core._ext.task.py_task import PyTask
    from legate.core.task import ADD, InputStore, OutputStore, ReductionStore

    def body(ctx: Any, **stores: Any) -> None:  # the signature Legate checks launches against; `_run` runs
        _run(ctx)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("ctx", kind, annotation=TaskContext)]
    params += [inspect.Parameter(f"i{n}", kind, annotation=InputStore) for n in range(inputs)]
    params += [inspect.Parameter(f"o{n}", kind, annotation=OutputStore) for n in range(outputs)]
    params += [inspect.Parameter(f"r{n}", kind, annotation=ReductionStore[ADD])
               for n in range(reductions)]
    params += [inspect.Parameter("key", kind, annotation=int),
               inspect.Parameter("layout", kind, annotation=str)]
    body.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    body.__name__ = body.__qualname__ = f"distal_generic_{inputs}i_{outputs}o_{reductions}r"
    return PyTask(func=body, variants=(VariantCode.CPU, VariantCode.OMP, VariantCode.GPU), invoker=_direct(body))


def generic_task(inputs: int, outputs: int, reductions: int) -> Any:
    """The registered generic task (a legate PyTask) for this arity."""
    arity = (inputs, outputs, reductions)
    found = _tasks.get(arity)
    if found is not None:
        return found
    ensure_started()
    with _lock:
        if arity not in _tasks:
            _tasks[arity] = _make(*arity)
        return _tasks[arity]
