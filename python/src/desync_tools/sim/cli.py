"""desync-sim: runs desync (or any MPI program built for SimGrid's SMPI) on a simulated cluster.

The command line (`main`): the parser of the three commands, and the platform command, which is
short (resolve_platform, write_platform and one line); run and calibrate-host are in run.py and
calibration.py.
"""
import argparse
import sys

from .. import __version__
from ..errors import UserError, run_main
from .calibration import command_calibrate
from .common import PROG
from .platform import (DEFAULT_LOOPBACK_BANDWIDTH, DEFAULT_LOOPBACK_LATENCY, DEFAULT_SPEED, PRESETS, resolve_platform,
                       write_platform)
from .run import command_run
from .topology import TOPOLOGIES

EPILOG = """\
examples:
  desync-sim platform --preset ib-edr --nodes 64 --cores 16 -o build/sim/edr
  desync-sim run --preset ib-edr --cores 16 --np 256 --costs build/sim/costs.json -- \
      build/smpi/desync jacobi --mode async
  desync-sim run --platform-dir build/sim/edr --np 1024 --costs build/sim/costs.json --slow-rank 3 \
      --slow-factor 2 -- build/smpi/desync jacobi
  desync-sim calibrate-host -o build/sim/host.json
  desync-sim platform --preset host --calibration build/sim/host.json -o build/sim/host

As a desync-run launcher (experiment file):
  launcher = "desync-sim run --preset ib-edr --cores 16 --np {ranks} --costs build/sim/costs.json -- {exe} {args}"

Presets: """ + ", ".join(PRESETS) + """ (desync-sim platform --list-presets). Described in docs/simulation.md."""


def _add_platform_options(p):
    g = p.add_argument_group("platform (explicit options override the preset)")
    g.add_argument("--preset", metavar="NAME", help=f"figures of a known network: {', '.join(PRESETS)}")
    g.add_argument("--nodes", type=int, metavar="N", help="nodes (run: default ceil(np / cores))")
    g.add_argument("--cores", type=int, metavar="C", help="cores per node, one rank slot each (default 1)")
    g.add_argument("--speed", metavar="FLOPS", help=f"flops per core (default {DEFAULT_SPEED})")
    g.add_argument("--bandwidth", metavar="BW", help="link bandwidth per direction, e.g. 12.5GBps or 100Gbps")
    g.add_argument("--latency", metavar="LAT", help="mean latency between two nodes, e.g. 1us")
    g.add_argument("--loopback-bandwidth", metavar="BW", help="between ranks of one node, e.g. 10GBps")
    g.add_argument("--loopback-latency", metavar="LAT", help="between ranks of one node, e.g. 0.3us")
    g.add_argument("--topology", metavar="NAME", help=f"{' | '.join(TOPOLOGIES)} (default crossbar)")
    g.add_argument("--topo-parameters", metavar="P", help="fat-tree: SimGrid's 'LEVELS;DOWN..;UP..;LINKS..'; "
                   "torus: dimensions 'X,Y,Z' (default: derived from the node count)")
    g.add_argument("--calibration", metavar="FILE", help="calibrate-host's measurement: the loopback figures, "
                   "and with --preset host the link figures too")


def build_parser():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("platform", help="write a SimGrid platform, hostfile and platform.json",
                       description="Writes DIR/platform.xml (a SimGrid cluster), DIR/hostfile (one line per rank "
                       "slot, node 0's cores first) and DIR/platform.json (every figure, its origin and source).")
    _add_platform_options(p)
    p.add_argument("-o", "--output", metavar="DIR", help="output folder (required unless --list-presets)")
    p.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    r = sub.add_parser("run", help="run a program under smpirun on a generated platform",
                       description="Runs `EXE ARGS...` under smpirun on a platform with enough nodes for --np "
                       "ranks, with DESYNC_SIM naming sim.json (the platform, the cost model, the rank speeds). "
                       "Prints `desync-sim: wall time X s` on standard error; exits with the program's code.",
                       usage="desync-sim run [options] --np R -- EXE [ARGS...]")
    _add_platform_options(r)
    r.add_argument("--platform-dir", metavar="DIR", help="use DIR/platform.xml and DIR/platform.json written by "
                   "`desync-sim platform` instead of the platform options")
    r.add_argument("--np", type=int, required=True, metavar="R", help="simulated ranks")
    r.add_argument("--costs", metavar="FILE", help="the cost model: JSON {kind: seconds per unit}")
    r.add_argument("--slow-rank", type=int, metavar="RANK", help="a rank whose core is slower ...")
    r.add_argument("--slow-factor", type=float, metavar="F", help="... by this factor (its speed is 1/F)")
    r.add_argument("--speed-spread", type=float, default=0.0, metavar="SIGMA",
                   help="per-node speed factors, lognormal with this sigma (default 0: none)")
    r.add_argument("--core-speed-spread", type=float, default=0.0, metavar="SIGMA",
                   help="per-core speed factors too: the lognormal quantiles of this sigma, one per rank in a seeded "
                        "order (default 0: none; bench/simgrid/calibrate.py measures this machine's as "
                        "core_speed_spread)")
    r.add_argument("--seed", type=int, default=0, help="seed of the per-node and per-core speed factors (default 0)")
    r.add_argument("--cfg", action="append", metavar="KEY:VALUE", help="a SimGrid configuration item, "
                   "overriding desync-sim's (repeatable), e.g. --cfg smpi/test:1e-6")
    r.add_argument("--out", metavar="DIR", help="keep platform.xml, hostfile, platform.json and sim.json here "
                   "(default: a temporary folder, removed after the run)")
    r.add_argument("--smpirun", default="smpirun", metavar="PATH", help="SimGrid's smpirun (default: on PATH)")
    r.add_argument("--dry-run", action="store_true", help="write the files, print the command, run nothing")
    c = sub.add_parser("calibrate-host", help="measure this machine's intra-node MPI latency and bandwidth",
                       description="Compiles an MPI ping-pong with mpicc, runs it with `mpirun -np 2` (8 B and "
                       "1 MiB messages) and writes {\"latency_s\", \"bandwidth_Bps\", ...} to FILE, for "
                       "`desync-sim platform --preset host --calibration FILE`.")
    c.add_argument("-o", "--output", required=True, metavar="FILE")
    c.add_argument("--mpicc", default="mpicc", help="MPI C compiler (default mpicc)")
    c.add_argument("--mpirun", default="mpirun", help="MPI launcher (default mpirun)")
    c.add_argument("--trials", type=int, default=5, help="trials; the least time counts (default 5)")
    c.add_argument("--timeout", type=float, default=300.0, help="seconds the ping-pong may take (default 300)")
    return parser


def _print_presets():
    for name, p in PRESETS.items():
        lat = p.get("loopback_latency", DEFAULT_LOOPBACK_LATENCY)
        bw = p.get("loopback_bandwidth", DEFAULT_LOOPBACK_BANDWIDTH)
        print(f"{name:9} {p['bandwidth']:>9} {p['latency']:>6} {p['topology']:9} loopback {bw} {lat}  "
              f"{p['description']}")


def _main(argv):
    argv = list(sys.argv[1:] if argv is None else argv)
    program = []
    if "--" in argv:
        i = argv.index("--")
        argv, program = argv[:i], argv[i + 1:]
    args = build_parser().parse_args(argv)
    if program and args.command != "run":
        raise UserError(f"{args.command}: takes no program after --")
    if args.command == "platform":
        if args.list_presets:
            _print_presets()
            return 0
        if not args.output:
            raise UserError("platform: give the output folder with -o DIR")
        p = resolve_platform(args)
        paths = write_platform(args.output, p)
        extra = f" ({p['topo_parameters']})" if p["topo_parameters"] else ""
        lat = p["latency_between_nodes_s"]
        print(f"{PROG}: wrote {paths['platform.xml']}: {p['nodes']} nodes x {p['cores']} cores, {p['topology']}"
              f"{extra}, {p['bandwidth_Bps'] / 1e9:.3g} GB/s, latency between nodes {lat['least'] * 1e6:.3g} to "
              f"{lat['most'] * 1e6:.3g} us (mean {lat['mean'] * 1e6:.3g}); hostfile {p['slots']} slots; platform.json")
        return 0
    if args.command == "run":
        return command_run(args, program)
    return command_calibrate(args)


def main(argv=None):
    return run_main(PROG, _main, argv)
