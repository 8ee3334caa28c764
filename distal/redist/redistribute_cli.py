"""``distal redistribute SRC DST --mesh x=4,y=4``: print a synthesized program.

>>> redistribute_main(["[2{x}8, 8]", "[8, 2{x}8]", "--mesh", "x=4"])
mesh {x: 4}
[2{x}8, 8]
  alltoall(0->1{x})  cost 16
[8, 2{x}8]
cost 16, height 16 (bound 16)
<BLANKLINE>
shardy:
sdy.mesh @mesh = <["x"=4]>
func.func @redistribute(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
0
"""

from __future__ import annotations

import argparse
import sys

from distal.errors import DistalError
from distal.redist.mesh import Mesh
from distal.redist.synth import METHODS, synthesize
from distal.redist.types import DistType

__all__ = ["redistribute_main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="distal redistribute",
        description="Synthesize collectives that redistribute an array from SRC to DST.",
    )
    p.add_argument("src", help='source type, e.g. "[32{x,y}512, 128]"')
    p.add_argument("dst", help='target type, e.g. "[128{x}512, 32{y}128]"')
    p.add_argument("--mesh", required=True, help="mesh axes, e.g. x=4,y=4")
    p.add_argument("--method", choices=METHODS, default="search")
    p.add_argument("--no-shardy", action="store_true", help="omit the Shardy form")
    return p


def redistribute_main(argv: list[str]) -> int:
    """Run the command with ``argv`` (without the program name); 0 on success, 1 on errors in
    the types or the mesh, 2 on usage mistakes (argparse)."""
    args = _parser().parse_args(argv)
    try:
        mesh = Mesh.parse(args.mesh)
        prog = synthesize(DistType.parse(args.src), DistType.parse(args.dst), mesh, args.method)
    except DistalError as e:
        print(f"distal redistribute: {e}", file=sys.stderr)
        return 1
    print(prog)
    if not args.no_shardy:
        print()
        print("shardy:")
        print(prog.to_shardy())
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(redistribute_main(sys.argv[1:]))
