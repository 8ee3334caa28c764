"""The format language: machines and tensor distribution notation."""

from distal.format.machine import Grid, Machine

__all__ = ["Grid", "Machine"]
