"""A pytest plugin that runs the collected tests in another order, to check that none depends on another.

    DISTAL_TEST_ORDER=reverse   .venv/bin/python -m pytest -q tests -p tests._order
    DISTAL_TEST_ORDER=shuffle:7 .venv/bin/python -m pytest -q tests -p tests._order

`reverse` runs the tests (not only the files) last to first; `shuffle:SEED`
in a random order drawn from SEED. Without the variable the order is pytest's.
"""

from __future__ import annotations

import os
import random

import pytest


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    order = os.environ.get("DISTAL_TEST_ORDER", "")
    if order == "reverse":
        items.reverse()
    elif order.startswith("shuffle:"):
        random.Random(int(order.removeprefix("shuffle:"))).shuffle(items)
    elif order:
        raise pytest.UsageError(f"expected DISTAL_TEST_ORDER 'reverse' or 'shuffle:SEED', but found {order!r}")
