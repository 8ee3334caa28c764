"""Links: the interconnects that join the units of a machine's levels (`distal.machine.level.Level.link`).

A `Link` is a switched interconnect: every endpoint has one port of
`bandwidth` bytes per second in each direction, and a message pays `latency`
seconds before its bytes flow. The reduction synthesizer (`distal.reduction`,
its `System`s are tuples of levels) simulates its programs on them and the time
model (`distal.model`, whose machines hold a node's levels) times a plan's
communication with them.

Figures (per direction):

- `NIC`: the hierarchical-reduction paper's section 5: 100 Gb/s NICs used at
  60%, "an effective 8 GB/s".
- `PCIE`: PCIe 4.0 x16, 32 GB/s.
- `NVLINK_V100`: the paper's V100 NVLink ring of 8 GPUs, 135 GB/s.
- `NVSWITCH_A100`: the A100 NVSwitch, 270 GB/s.
- `SHARED_MEMORY`: copies between processes of one host, 20 GB/s.
- `NVLINK2_LASSEN`: a V100 of a Lassen node (IBM AC922) reaches its neighbour
  and the CPU with 3 NVLink 2.0 bricks of 25 GB/s each: 75 GB/s (NVIDIA V100
  datasheet; LLNL Lassen/Sierra node description).
- `EDR_LASSEN`: a Lassen node's dual-rail InfiniBand EDR, 2 x 100 Gb/s = 25 GB/s
  out of the node; the DISTAL paper (section 7.1.2) reports that peak as
  "18/25 GB/s" (Legion reaches 18 GB/s from GPU memory).
- `HDR_DGX_A100`: a DGX A100's eight 200 Gb/s HDR ports, 8 x 25 = 200 GB/s per node.
- `XBUS_POWER9`: between the two POWER9 sockets of a Lassen node, 64 GB/s.

Latencies are typical MPI/NCCL figures (the papers give none): 1-2 us inside a
node, 1.5-10 us between nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from distal.errors import MachineError, ReductionError

__all__ = [
    "EDR_LASSEN",
    "GB",
    "HDR_DGX_A100",
    "LINKS",
    "NIC",
    "NVLINK2_LASSEN",
    "NVLINK_V100",
    "NVSWITCH_A100",
    "PCIE",
    "SHARED_MEMORY",
    "XBUS_POWER9",
    "Link",
    "LinkError",
]

GB = 1e9


class LinkError(MachineError, ReductionError):
    """A link description that is malformed (name, bandwidth or latency): a machine description's error, and a
    `ReductionError` as it was when links were the reduction synthesizer's."""


@dataclass(frozen=True, slots=True)
class Link:
    """A switched interconnect: per-port bandwidth (bytes/s) and latency (s).

    >>> NIC.bandwidth / 1e9
    8.0
    >>> str(NVSWITCH_A100)
    'nvswitch(270 GB/s, 2 us)'
    >>> NIC.seconds(8e9, messages=2)
    1.00002
    """

    name: str
    bandwidth: float
    latency: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise LinkError(f"expected an identifier as interconnect name, but found {self.name!r}")
        if isinstance(self.bandwidth, bool) or not isinstance(self.bandwidth, int | float) or not self.bandwidth > 0:
            raise LinkError(
                f"expected a positive bandwidth for interconnect {self.name}, but found {self.bandwidth!r}"
            )
        if isinstance(self.latency, bool) or not isinstance(self.latency, int | float) or not self.latency >= 0:
            raise LinkError(
                f"expected a non-negative latency for interconnect {self.name}, but found {self.latency!r}"
            )

    def seconds(self, nbytes: float, messages: int = 1) -> float:
        """Time to move `nbytes` through one port in `messages` messages (0 when nothing moves)."""
        if nbytes <= 0:
            return 0.0
        return messages * self.latency + nbytes / self.bandwidth

    def __str__(self) -> str:
        return f"{self.name}({self.bandwidth / GB:g} GB/s, {self.latency * 1e6:g} us)"


NIC = Link("nic", 8 * GB, 10e-6)
PCIE = Link("pcie", 32 * GB, 3e-6)
NVLINK_V100 = Link("nvlink", 135 * GB, 2e-6)
NVSWITCH_A100 = Link("nvswitch", 270 * GB, 2e-6)
SHARED_MEMORY = Link("shm", 20 * GB, 1e-6)
NVLINK2_LASSEN = Link("nvlink2", 75 * GB, 2e-6)
EDR_LASSEN = Link("edr", 25 * GB, 1.5e-6)
HDR_DGX_A100 = Link("hdr", 200 * GB, 1.5e-6)
XBUS_POWER9 = Link("xbus", 64 * GB, 1e-6)

#: Every named link, by name (the names `parse_levels` and the model presets use).
LINKS = {ln.name: ln for ln in (NIC, PCIE, NVLINK_V100, NVSWITCH_A100, SHARED_MEMORY, NVLINK2_LASSEN, EDR_LASSEN,
                                HDR_DGX_A100, XBUS_POWER9)}
