"""explain()'s prediction takes a hierarchical machine's outer level as its nodes: the split of bytes inside
and between nodes follows the Machine the user wrote, as the traffic table does (issue 27 item 1)."""

from __future__ import annotations

import distal as dt
from distal import kernels, model
from distal.model.explain import explained


def test_the_prediction_s_nodes_are_the_machine_s_outer_level() -> None:
    A, B, C = (dt.Tensor(n, (64, 64)) for n in "ABC")
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2)), A, B, C).compile()
    got, _, _ = explained(plan, model.lassen_cpu())  # two sockets a node: four nodes of eight sockets before
    assert got is not None
    assert [row["node"] for row in got.per_processor] == [0, 0, 0, 0, 1, 1, 1, 1]
    traffic = plan.stats()["traffic"]
    between = {t.receiver for t in traffic.transfers if t.level == 0}
    assert between  # the plan moves data between its nodes, and the model times those bytes on the node port
    assert sum(row["inter_bytes"] for row in got.per_processor) > 0
