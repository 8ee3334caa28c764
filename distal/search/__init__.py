"""The auto search: a schedule for any statement, chosen by distal's time model (`distal.search.auto`).

Its layer sits above the time model and the runtime and below the algorithm
library (`distal.kernels`), which hands itself in as a `Library` for its
candidates, and the objects users hold (`Schedule.auto`, `dt.einsum`).
"""

from distal.search.auto import (
    Library,
    Option,
    auto_schedule,
    default_machine,
    default_model,
    options,
    realise,
    resolve_machine,
)

__all__ = ["Library", "Option", "auto_schedule", "default_machine", "default_model", "options", "realise",
           "resolve_machine"]
