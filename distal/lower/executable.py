"""The end of lowering: a plan finished for a set of processors and a configuration, as one frozen value.

`finalize(plan, processors)` works out, once, everything that running a plan
on ``processors`` real processors needs beyond the plan itself, and returns
it as a frozen `Executable`. The runtime (`distal.runtime`) only interprets
an `Executable`; it imports nothing else from the compiler's lowering.

Results are cached per plan (by identity), processor count and
configuration (the Legate processors configured and whether launch points
are grouped into tasks, both read from the environment). The cache holds a
plan only weakly where the plan allows it, and at most `CACHE_PLANS` plans
in all (least recently used first out), so a plan that is dropped is freed.
`analysis_of(plan)` is the plan's analysis (`distal.lower.analysis.analyse`)
from the same cache.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from distal.host import configured_processors
from distal.lower.analysis import PlanAnalysis, analyse
from distal.lower.grouping import grouping_enabled
from distal.lower.plan import Plan

__all__ = ["CACHE_PLANS", "Configuration", "analysis_of", "configuration"]

CACHE_PLANS = 64  # plans whose finished values are kept at most (least recently used dropped first)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Configuration:
    """What a finished plan depends on beyond the plan: the real processors it runs on (``processors``),
    the Legate processors of its kind configured (``configured``) and whether launch points bound to one
    processor run as one task (``grouping``, ``DISTAL_GROUP_TASKS``)."""

    processors: int
    configured: int
    grouping: bool


def configuration(plan: Plan, processors: int | None = None) -> Configuration:
    """The configuration `plan` is finished for now: ``processors`` real processors (default: the Legate
    processors of the plan's kind configured) and the environment's settings."""
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    configured = configured_processors(kind)
    return Configuration(configured if processors is None else processors, configured, grouping_enabled())


def _fields(plan: Plan) -> tuple[Any, ...]:
    """The plan's fields a finished value is worked out from (not its data: ``bindings``)."""
    return (plan.statement, plan.tensors, plan.groups, plan.zero_output, plan.machine, plan.processor_slots,
            plan.reduction, plan.notes, plan.symbolic, plan.lints)


@dataclass(slots=True)
class _Slot:
    """One plan's cached values. ``anchor``: a weak reference to the plan, or (for a plan that cannot be
    referenced weakly) its fields, held strongly so that an identity check cannot be fooled by a reused id."""

    anchor: Any
    values: dict[Hashable, Any] = field(default_factory=dict)

    def holds(self, plan: Plan) -> bool:
        if isinstance(self.anchor, weakref.ref):
            return self.anchor() is plan
        return len(self.anchor) == len(made := _fields(plan)) and all(a is b for a, b in zip(self.anchor, made))


class _Cache:
    """Values worked out per plan (by identity), keyed further by what they depend on."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._slots: OrderedDict[int, _Slot] = OrderedDict()
        self._lock = threading.RLock()

    def get(self, plan: Plan, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            slot = self._slot(plan)
            if key in slot.values:
                return slot.values[key]  # type: ignore[no-any-return]
        found = make()
        with self._lock:
            return self._slot(plan).values.setdefault(key, found)  # type: ignore[no-any-return]

    def _slot(self, plan: Plan) -> _Slot:
        ident = id(plan)
        slot = self._slots.get(ident)
        if slot is not None and slot.holds(plan):
            self._slots.move_to_end(ident)
            return slot
        try:
            anchor: Any = weakref.ref(plan, lambda _ref, ident=ident: self._dropped(ident, _ref))
        except TypeError:  # a slotted plan without a weak reference slot
            anchor = _fields(plan)
        slot = self._slots[ident] = _Slot(anchor)
        while len(self._slots) > self.size:
            self._slots.popitem(last=False)
        return slot

    def _dropped(self, ident: int, ref: weakref.ref[Plan]) -> None:
        with self._lock:
            slot = self._slots.get(ident)
            if slot is not None and slot.anchor is ref:
                del self._slots[ident]

    def clear(self) -> None:
        with self._lock:
            self._slots.clear()

    def __len__(self) -> int:
        return len(self._slots)


_CACHE = _Cache(CACHE_PLANS)


def analysis_of(plan: Plan, processors: int | None = None) -> PlanAnalysis:
    """The plan under the execution-space cost model (`distal.lower.analysis.analyse`), worked out once per
    plan and configuration (its task counts read the Legate processors configured and the grouping switch)."""
    config = configuration(plan, processors)
    return _CACHE.get(plan, ("analysis", config), lambda: analyse(plan))
