"""desync-sim run: a simulated job. The speed factor of every rank (a slow rank, per-node and per-core
spreads), SimGrid's configuration of the run, the cost model (--costs), sim.json (what the program
reads through DESYNC_SIM), and smpirun itself, with its wall time on standard error."""
import json
import math
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from ..errors import UserError
from .common import PROG, read_json_option
from .platform import hostfile_lines, parse_speed, resolve_platform, simgrid_number, write_platform

# SMPI 3.32's default allgather (R^2 messages at once) costs seconds of wall time per call from ~100 ranks
# (MPI_Win_allocate uses it); recursive doubling (rdb) needs log2 R rounds.
ALLGATHER_RDB_RANKS = 128


def core_speed_factors(ranks, sigma, seed=0):
    """One factor per rank for --core-speed-spread: the lognormal (mu 0, sigma) distribution's
    quantiles at (i + 0.5) / ranks, i = 0 .. ranks - 1, in an order shuffled by random.Random(seed).
    Quantiles rather than draws, so that even 2 ranks always differ as the distribution says (at
    sigma 0.02: 0.987 and 1.014) instead of by whatever two draws happen to give."""
    normal = statistics.NormalDist()
    factors = [math.exp(sigma * normal.inv_cdf((i + 0.5) / ranks)) for i in range(ranks)]
    random.Random(seed).shuffle(factors)
    return factors


def rank_speeds(ranks, cores, spread=0.0, seed=0, slow_rank=None, slow_factor=None, core_spread=0.0):
    """One speed factor per rank: 1.0; under a spread s, a lognormal factor (mu 0, sigma s) per node,
    drawn in node order from random.Random(seed), the same for every rank of the node; under a core
    spread c, each rank's factor times its core's (core_speed_factors); the slow rank's factor
    divided by slow_factor."""
    speeds = [1.0] * ranks
    if spread:
        rng = random.Random(seed)
        factors = [rng.lognormvariate(0.0, spread) for _ in range(-(-ranks // cores))]
        speeds = [factors[r // cores] for r in range(ranks)]
    if core_spread:
        speeds = [s * f for s, f in zip(speeds, core_speed_factors(ranks, core_spread, seed))]
    if slow_rank is not None:
        speeds[slow_rank] /= slow_factor
    return speeds


def parse_cfg(items):
    out = {}
    for item in items or []:
        key, sep, value = item.partition(":")
        if not sep or not key or not value:
            raise UserError(f"--cfg: '{item}' is not KEY:VALUE (e.g. smpi/test:1e-6)")
        if any(c.isspace() for c in item):
            raise UserError(f"--cfg: '{item}' has white space, which smpirun 3.32 splits")
        out[key] = value
    return out


def simulation_config(p, ranks, user_cfg):
    """The --cfg items of a run, user items last (they win)."""
    cfg = {
        "smpi/simulate-computation": "no",
        "smpi/host-speed": simgrid_number(p["speed_flops"]) + "f",
        "smpi/test": "1e-8",
        "smpi/iprobe": "1e-8",
        "smpi/grow-injected-times": "no",
        "smpi/privatization": "dlopen",
        "smpi/lat-factor": p.get("lat_factor", "0:1"),
        "smpi/bw-factor": "0:1",
    }
    if ranks >= ALLGATHER_RDB_RANKS:
        cfg["smpi/allgather"] = "rdb"
    cfg.update(user_cfg)
    return cfg


def _program(exe):
    if os.sep in exe:
        if not os.path.isfile(exe):
            raise UserError(f"program '{exe}' not found")
        return os.path.abspath(exe)
    found = shutil.which(exe)
    if found is None:
        if os.path.isfile(exe):
            return os.path.abspath(exe)
        raise UserError(f"program '{exe}' not found (neither a file nor on PATH)")
    return os.path.abspath(found)


def _check_args(args):
    for a in args:
        if a == "" or any(c.isspace() for c in a) or any(c in a for c in "*?["):
            raise UserError(f"program argument {a!r}: smpirun 3.32 passes the program's arguments through the "
                            "shell unquoted, so they cannot be empty or hold white space or * ? [")


def _platform_given(args):
    return [k for k in ("preset", "nodes", "cores", "speed", "bandwidth", "latency", "loopback_bandwidth",
                        "loopback_latency", "topology", "topo_parameters", "calibration")
            if getattr(args, k, None) is not None]


def _load_platform_dir(folder):
    path = os.path.join(folder, "platform.json")
    p = read_json_option("--platform-dir", path, hint=" (write it with desync-sim platform)")
    xml = os.path.join(folder, "platform.xml")
    if not os.path.isfile(xml):
        raise UserError(f"--platform-dir: {xml} is missing")
    return p, os.path.abspath(xml)


def load_costs(path):
    """The cost model {kind: seconds per unit} of a --costs file: the file's object itself, or its
    "costs" object (bench/simgrid/calibrate.py writes {"costs": {...}, "calibration": {...}}); and
    where it came from (the path and the file's other keys) for sim.json."""
    data = read_json_option("--costs", path)
    if not isinstance(data, dict):
        raise UserError(f"--costs: {path} must hold an object {{kind: seconds per unit}}")
    nested = isinstance(data.get("costs"), dict)
    costs = data["costs"] if nested else data
    for kind, value in costs.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            raise UserError(f"--costs: {path}: \"{kind}\" is {json.dumps(value)}, not seconds per unit (a number >= 0)")
    source = {"file": os.path.abspath(path)}
    if nested:
        source.update({k: v for k, v in data.items() if k != "costs"})
    return costs, source


def command_run(args, program):
    if not program:
        raise UserError("run: give the program after --, e.g. desync-sim run --np 4 -- ./app ARGS")
    ranks = args.np
    if ranks < 1:
        raise UserError(f"--np: the number of ranks must be at least 1, not {ranks}")
    if (args.slow_rank is None) != (args.slow_factor is None):
        raise UserError("--slow-rank and --slow-factor go together")
    if args.slow_rank is not None:
        if not 0 <= args.slow_rank < ranks:
            raise UserError(f"--slow-rank: {args.slow_rank} is not a rank of {ranks}")
        if not args.slow_factor > 0:
            raise UserError(f"--slow-factor: must be positive, not {args.slow_factor:g}")
    if not args.speed_spread >= 0:
        raise UserError(f"--speed-spread: must be 0 or more, not {args.speed_spread:g}")
    if not 0 <= args.core_speed_spread < 1:
        raise UserError(f"--core-speed-spread: must be at least 0 and below 1, not {args.core_speed_spread:g}")
    user_cfg = parse_cfg(args.cfg)
    costs, costs_file = load_costs(args.costs) if args.costs else ({}, None)
    try:
        exe = _program(program[0])
    except UserError:
        if not args.dry_run:
            raise
        exe = program[0]
    _check_args(program[1:])
    smpirun = shutil.which(args.smpirun)
    if smpirun is None and not args.dry_run:
        raise UserError(f"{args.smpirun} not found: desync-sim runs programs under SimGrid's smpirun "
                        "(Debian/Ubuntu: apt-get install libsimgrid-dev; or give --smpirun PATH)")
    smpirun = smpirun or args.smpirun

    if args.platform_dir:
        given = _platform_given(args)
        if given:
            raise UserError(f"--platform-dir: the platform comes from the folder; leave out "
                            f"{', '.join('--' + g.replace('_', '-') for g in given)}")
        p, xml = _load_platform_dir(args.platform_dir)
        if ranks > p["slots"]:
            raise UserError(f"--np {ranks}: the platform in {args.platform_dir} has only {p['nodes']} nodes x "
                            f"{p['cores']} cores = {p['slots']} rank slots")
    else:
        p, xml = resolve_platform(args, ranks), None

    if args.out and any(c.isspace() for c in os.path.abspath(args.out)):
        raise UserError(f"--out: '{args.out}' has white space, which smpirun 3.32 splits (in the hostfile's path)")
    folder = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="desync-sim-")
    os.makedirs(folder, exist_ok=True)
    try:
        if xml is None:
            paths = write_platform(folder, p, slots=ranks)
            xml, hostfile = paths["platform.xml"], paths["hostfile"]
        else:
            hostfile = os.path.join(folder, "hostfile")
            with open(hostfile, "w", encoding="utf-8") as f:
                f.write("\n".join(hostfile_lines(p["cores"], ranks)) + "\n")
        cfg = simulation_config(p, ranks, user_cfg)
        cmd = [smpirun, "-np", str(ranks), "-platform", xml, "-hostfile", hostfile]
        cmd += [f"--cfg={k}:{v}" for k, v in cfg.items()]
        cmd += [exe] + program[1:]
        sim_path = os.path.join(folder, "sim.json")
        sim = {"platform": p, "ranks": ranks, "costs": costs, "costs_file": costs_file,
               "rank_speed": rank_speeds(ranks, p["cores"], args.speed_spread, args.seed, args.slow_rank,
                                         args.slow_factor, args.core_speed_spread),
               "rank_speed_model": {"speed_spread": args.speed_spread, "core_speed_spread": args.core_speed_spread,
                                    "seed": args.seed, "slow_rank": args.slow_rank, "slow_factor": args.slow_factor},
               "smpirun": cmd, "config": user_cfg,
               # what a second of the cost model is in flops (smpi/host-speed): desync executes
               # charge x this many flops, on a host of the platform's speed
               "host_speed_flops": parse_speed(cfg["smpi/host-speed"], "smpi/host-speed")}
        with open(sim_path, "w", encoding="utf-8") as f:
            json.dump(sim, f, indent=2)
            f.write("\n")
        if args.dry_run:
            print(f"DESYNC_SIM={shlex.quote(sim_path)} {shlex.join(cmd)}")
            return 0
        return _execute(cmd, sim_path)
    finally:
        if not args.out:
            shutil.rmtree(folder, ignore_errors=True)


def _execute(cmd, sim_path):
    env = dict(os.environ)
    env["DESYNC_SIM"] = sim_path
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as e:
        raise UserError(f"could not start {cmd[0]}: {e.strerror}") from None

    def forward(signum, frame):  # pass SIGTERM on to smpirun, then leave through the cleanup
        proc.send_signal(signum)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        code = proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        print(f"{PROG}: wall time {time.monotonic() - start:.3f} s", file=sys.stderr, flush=True)
    return 128 - code if code < 0 else code
