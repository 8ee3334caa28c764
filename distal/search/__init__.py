"""The auto search: a schedule for any statement, chosen by distal's time model (`distal.search.auto`).

It sits above the time model and the runtime, beside the algorithm library
(`distal.kernels`), which imports it (never the other way) and hands itself
in as a `Library` for its candidates, and below the objects users hold
(`Schedule.auto`, `dt.einsum`).
"""

from distal.search.auto import (
    Library,
    Option,
    auto_schedule,
    default_machine,
    default_model,
    moved_bytes,
    options,
    realise,
    resolve_machine,
    timing_processors,
)

__all__ = ["Library", "Option", "auto_schedule", "default_machine", "default_model", "moved_bytes", "options",
           "realise", "resolve_machine", "timing_processors"]
