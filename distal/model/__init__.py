"""distal.model: machine models as data, and the predicted time of a plan on one.

>>> import distal as dt
>>> from distal import model
>>> A, B, C = dt.Tensor("A", (64, 64)), dt.Tensor("B", (64, 64)), dt.Tensor("C", (64, 64))
>>> plan = dt.kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), A, B, C).compile()
>>> p = plan.predict(model.lassen_gpu())
>>> p.steps, p.fits, p.seconds > 0
(4, True, True)
"""

from distal.machine import links
from distal.machine.level import Level
from distal.machine.links import LINKS, Link, LinkError
from distal.model import calibrate
from distal.model.calibrate import preset
from distal.model.hardware import (
    BROADCASTS,
    FOLDS,
    LEAF_KINDS,
    MachineModel,
    ModelError,
    ProcessorModel,
    dgx_a100,
    lassen_cpu,
    lassen_gpu,
)
from distal.model.predict import Prediction, predict


def this_machine(recalibrate: bool = False) -> MachineModel:
    """This machine's model, calibrated once and cached (see `distal.model.calibrate`)."""
    return calibrate.this_machine(recalibrate)


__all__ = [
    "BROADCASTS",
    "FOLDS",
    "LEAF_KINDS",
    "LINKS",
    "Level",
    "Link",
    "LinkError",
    "MachineModel",
    "ModelError",
    "Prediction",
    "ProcessorModel",
    "dgx_a100",
    "lassen_cpu",
    "lassen_gpu",
    "links",
    "predict",
    "preset",
    "this_machine",
]
