"""Reduction strategies on hierarchical machines (papers/hierarchical-reduction-synthesis.txt).

Systems and placements (section 3.1), the reduction language and its
state-matrix semantics (sections 3.2-3.4), syntax-guided synthesis (3.5), a
topology-aware simulator (section 5), lowering to physical device groups and
a NumPy executor.

>>> from distal.reduction import plan_reduction, NIC, NVSWITCH_A100
>>> plan = plan_reduction([("node", 2, NIC), ("gpu", 16, NVSWITCH_A100)], range(32))
>>> print(plan.program)
(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce) ; (node, InsideGroup, AllGather)
"""

from distal.machine.level import Level
from distal.machine.links import Link
from distal.reduction.execute import execute, execute_lowered
from distal.reduction.language import CollectiveKind, Form, ReductionProgram, ReductionStep, parse_program
from distal.reduction.lowering import LoweredProgram, LoweredStep, lower_to_devices
from distal.reduction.machines import describe_plan, machine_plan
from distal.reduction.parallelism import (
    DeviceLayout,
    Placement,
    SynthesisHierarchy,
    enumerate_placements,
    layout_from_groups,
)
from distal.reduction.ranking import (
    DEFAULT_BYTES,
    Ranked,
    ReductionPlan,
    allreduce_program,
    best_program,
    plan_reduction,
    rank,
)
from distal.reduction.semantics import check_program, groups, run_program
from distal.reduction.synthesis import Synthesis, candidate_steps, synthesize_programs
from distal.reduction.system import (
    NIC,
    NVLINK_V100,
    NVSWITCH_A100,
    PCIE,
    SHARED_MEMORY,
    System,
    a100_system,
    named_system,
    parse_levels,
    system_from_machine,
    v100_system,
)
from distal.reduction.timing import simulated_seconds

__all__ = [
    "DEFAULT_BYTES",
    "NIC",
    "NVLINK_V100",
    "NVSWITCH_A100",
    "PCIE",
    "SHARED_MEMORY",
    "CollectiveKind",
    "DeviceLayout",
    "Form",
    "Level",
    "Link",
    "LoweredProgram",
    "LoweredStep",
    "Placement",
    "Ranked",
    "ReductionPlan",
    "ReductionProgram",
    "ReductionStep",
    "Synthesis",
    "SynthesisHierarchy",
    "System",
    "a100_system",
    "allreduce_program",
    "best_program",
    "candidate_steps",
    "check_program",
    "describe_plan",
    "enumerate_placements",
    "execute",
    "execute_lowered",
    "groups",
    "layout_from_groups",
    "lower_to_devices",
    "machine_plan",
    "named_system",
    "parse_levels",
    "parse_program",
    "plan_reduction",
    "rank",
    "run_program",
    "simulated_seconds",
    "synthesize_programs",
    "system_from_machine",
    "v100_system",
]
