"""desync-sim: runs desync (or any MPI program built for SimGrid's SMPI) on a simulated cluster.

Three commands (docs/simulation.md):
  platform        writes a SimGrid platform (platform.xml), a hostfile and platform.json describing
                  every figure, for N nodes x C cores, from a preset and/or explicit options;
  run             generates the platform for R ranks, writes sim.json (the platform, the cost model,
                  one speed factor per rank, the smpirun command) and runs the program under smpirun
                  with DESYNC_SIM naming sim.json;
  calibrate-host  measures this machine's intra-node MPI latency and bandwidth with the real MPI
                  (mpicc + mpirun ping-pong), for `platform --preset host --calibration FILE`.

Checked against SimGrid 3.32 (Debian libsimgrid-dev). Standard library only.
"""
import argparse
import datetime
import json
import math
import os
import platform as _platform
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from . import __version__
from .errors import UserError, run_main

PROG = "desync-sim"

# --------------------------------------------------------------------------------------------------
# Presets. Figures are approximate public numbers: the link's nominal data rate (per direction) and
# the small-message MPI latency one node sees to another (half a ping-pong round trip), as vendor
# data sheets and public benchmark reports give them. The intra-node (loopback) figures are those of
# a shared-memory MPI ping-pong on a current x86 node unless the preset says otherwise.
# --------------------------------------------------------------------------------------------------

DEFAULT_SPEED = "1Gf"
DEFAULT_LOOPBACK_BANDWIDTH = "10GBps"
DEFAULT_LOOPBACK_LATENCY = "0.3us"
LOOPBACK_SOURCE = ("loopback ~0.3 us / ~10 GB/s: typical shared-memory MPI ping-pong on a current x86 node "
                   "(approximate; measure a machine with desync-sim calibrate-host)")

PRESETS = {
    "ib-edr": {
        "description": "InfiniBand EDR 4x, 100 Gb/s, two-level fat tree",
        "bandwidth": "12.5GBps", "latency": "1us", "topology": "fat-tree",
        "source": "IBTA EDR 4x data rate 100 Gb/s = 12.5 GB/s per direction (MPI reaches ~95%); ~1 us MPI "
                  "latency as reported for ConnectX-5 EDR systems (adapter data sheet: sub-600 ns, plus "
                  "switch and MPI); fat tree: the usual EDR deployment. Approximate.",
    },
    "ib-hdr": {
        "description": "InfiniBand HDR 4x, 200 Gb/s, two-level fat tree",
        "bandwidth": "25GBps", "latency": "1us", "topology": "fat-tree",
        "source": "IBTA HDR 4x data rate 200 Gb/s = 25 GB/s per direction; ~1 us MPI latency as reported for "
                  "ConnectX-6 HDR systems (adapter data sheet: sub-600 ns); fat tree: the usual HDR "
                  "deployment. Approximate.",
    },
    "omnipath": {
        "description": "Intel Omni-Path 100 series, 100 Gb/s, two-level fat tree",
        "bandwidth": "12.5GBps", "latency": "1us", "topology": "fat-tree",
        "source": "Omni-Path 100 series link rate 100 Gb/s = 12.5 GB/s per direction; ~1 us MPI latency "
                  "(Intel's published OPA figures, switch port-to-port ~100 ns); fat tree: the usual "
                  "deployment. Approximate.",
    },
    "aries": {
        "description": "Cray Aries (XC series), dragonfly approximated by a two-level fat tree",
        "bandwidth": "10GBps", "latency": "1.3us", "topology": "fat-tree",
        "source": "Cray XC series network (Aries) white paper: ~10 GB/s injection bandwidth per node, "
                  "~1.3 us MPI latency. Aries is a dragonfly with adaptive routing; it is approximated "
                  "here by a full-bisection two-level fat tree (optimistic for global-link bandwidth). "
                  "Approximate.",
    },
    "eth-10g": {
        "description": "10 Gigabit Ethernet, MPI over TCP, one non-blocking switch",
        "bandwidth": "1.25GBps", "latency": "25us", "topology": "crossbar",
        "source": "IEEE 802.3 10GBASE: 10 Gb/s = 1.25 GB/s per direction; MPI over kernel TCP: tens of us "
                  "small-message latency (25 us taken). Approximate.",
    },
    "eth-100g": {
        "description": "100 Gigabit Ethernet, MPI over TCP, one non-blocking switch",
        "bandwidth": "12.5GBps", "latency": "15us", "topology": "crossbar",
        "source": "IEEE 802.3 100GBASE: 100 Gb/s = 12.5 GB/s per direction; MPI over kernel TCP: ~10-20 us "
                  "small-message latency (15 us taken; with RoCE give --latency 2us). Approximate.",
    },
    "host": {
        "description": "this machine: one node, 2 cores, shared-memory MPI",
        "nodes": 1, "cores": 2, "bandwidth": "10GBps", "latency": "1us",
        "loopback_bandwidth": "10GBps", "loopback_latency": "1us", "topology": "crossbar",
        "source": "a 2-core machine's shared-memory MPI ping-pong: ~1 us, ~10 GB/s (approximate; "
                  "desync-sim calibrate-host measures them; platform --calibration FILE uses the "
                  "measurement). Links between nodes, when a run needs more than one, get the same figures.",
    },
}

DEFAULTS = {"cores": 1, "speed": DEFAULT_SPEED, "bandwidth": "12.5GBps", "latency": "1us",
            "loopback_bandwidth": DEFAULT_LOOPBACK_BANDWIDTH, "loopback_latency": DEFAULT_LOOPBACK_LATENCY,
            "topology": "crossbar"}
DEFAULTS_SOURCE = "desync-sim defaults (the ib-edr figures on a crossbar); " + LOOPBACK_SOURCE

TOPOLOGIES = ("crossbar", "fat-tree", "torus")
HOST_PREFIX = "node-"
# SMPI 3.32's default allgather (R^2 messages at once) costs seconds of wall time per call from ~100 ranks
# (MPI_Win_allocate uses it); recursive doubling (rdb) needs log2 R rounds.
ALLGATHER_RDB_RANKS = 128

# --------------------------------------------------------------------------------------------------
# Units, as SimGrid writes them: speed 1Gf, bandwidth 12.5GBps or 100Gbps, latency 1us.
# --------------------------------------------------------------------------------------------------

_FLOAT = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40, "Pi": 2.0 ** 50, "Ei": 2.0 ** 60}
_TIME = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9, "ps": 1e-12}


def parse_speed(text, what="--speed"):
    """Flops per second from '1Gf', '2.5Gflops', '1e9'."""
    m = re.fullmatch(_FLOAT + r"\s*((?:[kKMGTPE]i?)?)(f|flops)?", str(text).strip())
    if not m or (m.group(2) and not m.group(3)):
        raise UserError(f"{what}: '{text}' is not a speed (e.g. 1Gf, 2.5Gf, 1e9)")
    value = float(m.group(1)) * _PREFIX[m.group(2)]
    if not value > 0:
        raise UserError(f"{what}: the speed must be positive, not '{text}'")
    return value


def parse_bandwidth(text, what="--bandwidth"):
    """Bytes per second from '12.5GBps' (bytes), '100Gbps' (bits), '10GiBps', '1e9' (bytes)."""
    m = re.fullmatch(_FLOAT + r"\s*((?:[kKMGTPE]i?)?)(Bps|bps|B/s|b/s)?", str(text).strip())
    if not m or (m.group(2) and not m.group(3)):
        raise UserError(f"{what}: '{text}' is not a bandwidth (e.g. 12.5GBps, 100Gbps)")
    value = float(m.group(1)) * _PREFIX[m.group(2)] / (8.0 if m.group(3) in ("bps", "b/s") else 1.0)
    if not value > 0:
        raise UserError(f"{what}: the bandwidth must be positive, not '{text}'")
    return value


def parse_latency(text, what="--latency"):
    """Seconds from '1us', '0.5ms', '25us', '1e-6' (seconds)."""
    m = re.fullmatch(_FLOAT + r"\s*(s|ms|us|\u00b5s|ns|ps)?", str(text).strip())
    if not m:
        raise UserError(f"{what}: '{text}' is not a latency (e.g. 1us, 0.5us, 25us)")
    return float(m.group(1)) * _TIME[m.group(2) or ""]


def _num(x):
    """A number as the platform file writes it: 12 significant digits, no trailing zeros."""
    return f"{x:.12g}"


# --------------------------------------------------------------------------------------------------
# Topologies
# --------------------------------------------------------------------------------------------------


def fat_tree_parameters(nodes):
    """SimGrid FAT_TREE topo_parameters for `nodes` nodes: two levels, d1 nodes per leaf switch (the
    smallest divisor of N with d1 * d1 >= N), d2 = N / d1 leaf switches, d1 spine switches each joined
    to every leaf by one link (full bisection). One switch ("1;N;1;1") when N has no such split."""
    if nodes == 1:
        return "1;1;1;1"
    d1 = min(d for d in range(1, nodes + 1) if nodes % d == 0 and d * d >= nodes)
    d2 = nodes // d1
    if d2 == 1:
        return f"1;{nodes};1;1"
    return f"2;{d1},{d2};1,{d1};1,1"


def _int_list(text, what):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"{what}: '{text}' is not a comma-separated list of whole numbers") from None
    if any(v < 1 for v in values):
        raise UserError(f"{what}: '{text}' has a number below 1")
    return values


def parse_fat_tree(text, nodes):
    """The down counts of a FAT_TREE topo_parameters 'levels;down,...;up,...;links,...' for N nodes."""
    what = f"--topo-parameters '{text}'"
    parts = str(text).split(";")
    if len(parts) != 4:
        raise UserError(f"{what}: a fat tree is 'LEVELS;DOWN,...;UP,...;LINKS,...' (e.g. 2;8,8;1,8;1,1)")
    try:
        levels = int(parts[0])
    except ValueError:
        raise UserError(f"{what}: the number of levels '{parts[0]}' is not a whole number") from None
    if levels < 1:
        raise UserError(f"{what}: the number of levels must be at least 1")
    lists = [_int_list(p, what) for p in parts[1:]]
    if any(len(values) != levels for values in lists):
        raise UserError(f"{what}: each of the three lists needs {levels} numbers (one per level)")
    if math.prod(lists[0]) != nodes:
        raise UserError(f"{what}: the down counts multiply to {math.prod(lists[0])} nodes, not {nodes}")
    return lists[0]


def torus_dimensions(nodes):
    """Near-cubic torus dimensions for N nodes: a <= b <= c with a*b*c = N and c - a smallest, written
    longest first, dimensions of 1 left out (SimGrid 3.32 fails on them)."""
    best = None
    a = 1
    while a * a * a <= nodes:
        if nodes % a == 0:
            m = nodes // a
            b = a
            while b * b <= m:
                if m % b == 0:
                    c = m // b
                    key = (c - a, c)
                    if best is None or key < best[0]:
                        best = (key, (c, b, a))
                b += 1
        a += 1
    dims = [d for d in best[1] if d > 1]
    return dims or [1]


def parse_torus(text, nodes):
    what = f"--topo-parameters '{text}'"
    dims = _int_list(str(text), what)
    if math.prod(dims) != nodes:
        raise UserError(f"{what}: the torus dimensions multiply to {math.prod(dims)} nodes, not {nodes}")
    if len(dims) > 1 and 1 in dims:
        raise UserError(f"{what}: leave out dimensions of size 1 (SimGrid 3.32 fails on them)")
    return dims


def _ring_mean(d):
    return sum(min(k, d - k) for k in range(d)) / d


def links_between_nodes(topology, nodes, shape):
    """(mean, fewest, most) links a message crosses between two distinct nodes. crossbar: the two
    private links (the backbone has no latency); fat tree: 2 per level up to the lowest common switch;
    torus: one per hop, shortest way round each ring, dimension by dimension."""
    if topology == "crossbar" or nodes == 1:
        n = 1 if topology == "torus" else 2
        return float(n), n, n
    if topology == "fat-tree":
        below = [1]
        for d in shape:
            below.append(below[-1] * d)
        total = sum(2 * level * (below[level] - below[level - 1]) for level in range(1, len(below)))
        levels = [level for level in range(1, len(below)) if below[level] > below[level - 1]]
        return total / (nodes - 1), 2 * levels[0], 2 * levels[-1]
    mean_all = sum(_ring_mean(d) for d in shape)  # over ordered pairs, a node with itself included
    return nodes * mean_all / (nodes - 1), 1, sum(d // 2 for d in shape)


# --------------------------------------------------------------------------------------------------
# The platform
# --------------------------------------------------------------------------------------------------

PLATFORM_KEYS = ("nodes", "cores", "speed", "bandwidth", "latency", "loopback_bandwidth", "loopback_latency",
                 "topology", "topo_parameters")


def read_json_option(option, path):
    """The JSON document in the file an option names; one UserError if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise UserError(f"{option}: cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{option}: {path} is not JSON: {e}") from None


def load_calibration(path):
    data = read_json_option("--calibration", path)
    out = {}
    for key in ("latency_s", "bandwidth_Bps"):
        value = data.get(key) if isinstance(data, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise UserError(f"--calibration: {path} has no positive \"{key}\" (write it with desync-sim "
                            "calibrate-host)")
        out[key] = float(value)
    if isinstance(data, dict) and data.get("lat_factor") is not None:
        out["lat_factor"] = parse_lat_factor(data["lat_factor"], f"--calibration: {path}")
    return out


def resolve_platform(args, ranks=None):
    """The platform description (platform.json's contents). Each figure comes from its option, else
    the calibration (--calibration: the loopback; with --preset host the links too), else the preset,
    else the default. ranks: the run's rank count (N = ceil(R / C) when --nodes is not given)."""
    preset = None
    if args.preset is not None:
        if args.preset not in PRESETS:
            raise UserError(f"--preset: unknown preset '{args.preset}' (presets: {', '.join(PRESETS)})")
        preset = PRESETS[args.preset]
    calibration = load_calibration(args.calibration) if args.calibration else None
    values, origin = {}, {}

    def pick(key, calibrated=None):
        given = getattr(args, key, None)
        if given is not None:
            values[key], origin[key] = given, "option"
        elif calibrated is not None:
            values[key], origin[key] = calibrated, "calibration"
        elif preset is not None and key in preset:
            values[key], origin[key] = preset[key], "preset"
        elif key in DEFAULTS:
            values[key], origin[key] = DEFAULTS[key], "default"

    link_calibrated = calibration is not None and args.preset == "host"
    for key in ("cores", "speed", "topology"):
        pick(key)
    pick("bandwidth", calibration["bandwidth_Bps"] if link_calibrated else None)
    pick("latency", calibration["latency_s"] if link_calibrated else None)
    pick("loopback_bandwidth", calibration["bandwidth_Bps"] if calibration else None)
    pick("loopback_latency", calibration["latency_s"] if calibration else None)

    cores = values["cores"]
    if not isinstance(cores, int) or cores < 1:
        raise UserError(f"--cores: the number of cores per node must be at least 1, not {cores}")
    if args.nodes is not None:
        nodes, origin["nodes"] = args.nodes, "option"
    elif ranks is not None:
        nodes, origin["nodes"] = -(-ranks // cores), "ranks"
    elif preset is not None and "nodes" in preset:
        nodes, origin["nodes"] = preset["nodes"], "preset"
    else:
        raise UserError("--nodes: give the number of nodes (only the host preset has one)")
    if not isinstance(nodes, int) or nodes < 1:
        raise UserError(f"--nodes: the number of nodes must be at least 1, not {nodes}")
    if ranks is not None and ranks > nodes * cores:
        raise UserError(f"--np {ranks}: the platform has only {nodes} nodes x {cores} cores = {nodes * cores} "
                        "rank slots (give more --nodes or --cores)")

    topology = values["topology"]
    if topology not in TOPOLOGIES:
        raise UserError(f"--topology: unknown topology '{topology}' (topologies: {', '.join(TOPOLOGIES)})")
    given = getattr(args, "topo_parameters", None)
    if given is not None:
        given = re.sub(r"\s+", "", given)
    if topology == "crossbar":
        if given is not None:
            raise UserError("--topo-parameters: only for --topology fat-tree or torus")
        topo_parameters, shape = "", None
    elif topology == "fat-tree":
        topo_parameters = given if given is not None else fat_tree_parameters(nodes)
        shape = parse_fat_tree(topo_parameters, nodes)
    else:
        shape = parse_torus(given, nodes) if given is not None else torus_dimensions(nodes)
        topo_parameters = given if given is not None else ",".join(str(d) for d in shape)
    origin["topo_parameters"] = ("option" if given is not None else "derived") if topology != "crossbar" else "none"

    def number(key, parse):
        v = values[key]
        return float(v) if isinstance(v, (int, float)) else parse(v, "--" + key.replace("_", "-"))

    speed = number("speed", parse_speed)
    bandwidth = number("bandwidth", parse_bandwidth)
    latency = number("latency", parse_latency)
    loop_bw = number("loopback_bandwidth", parse_bandwidth)
    loop_lat = number("loopback_latency", parse_latency)
    mean_links, fewest, most = links_between_nodes(topology, nodes, shape)
    link_latency = latency / mean_links
    if preset is not None:
        source = preset["source"]
        if "loopback_latency" not in preset:
            source += " " + LOOPBACK_SOURCE[0].upper() + LOOPBACK_SOURCE[1:] + "."
    else:
        source = DEFAULTS_SOURCE
    return {
        "generator": f"desync-sim {__version__}",
        "simgrid_dtd": "https://simgrid.org/simgrid.dtd (version 4.1)",
        "preset": args.preset,
        "preset_description": preset["description"] if preset else None,
        "source": source,
        "calibration": ({"file": os.path.abspath(args.calibration), **calibration} if calibration else None),
        "nodes": nodes,
        "cores": cores,
        "slots": nodes * cores,
        "hosts": f"{HOST_PREFIX}0 .. {HOST_PREFIX}{nodes - 1}",
        "speed_flops": speed,
        "bandwidth_Bps": bandwidth,
        "latency_s": latency,
        "loopback_bandwidth_Bps": loop_bw,
        "loopback_latency_s": loop_lat,
        "topology": topology,
        "topo_parameters": topo_parameters,
        "link_bandwidth_Bps": bandwidth,
        "link_latency_s": link_latency,
        "backbone_bandwidth_Bps": bandwidth * nodes if topology == "crossbar" else None,
        "links_between_nodes": {"mean": mean_links, "fewest": fewest, "most": most},
        "latency_between_nodes_s": {"mean": latency, "least": fewest * link_latency, "most": most * link_latency},
        "origin": {k: origin.get(k) for k in PLATFORM_KEYS},
        # with --preset host and a calibration that measured the curve, every link is this machine's
        # shared memory, and messages take the measured time at each size
        "lat_factor": calibration.get("lat_factor", "0:1") if link_calibrated else "0:1",
        "model": "SimGrid cluster: one host per node with `cores` cores of speed_flops each; every link "
                 "bandwidth_Bps (split-duplex), latency link_latency_s, so that the mean latency between two "
                 "distinct nodes is latency_s; ranks on one node talk through its loopback link "
                 "(loopback_latency_s, loopback_bandwidth_Bps). desync-sim run sets smpi/lat-factor and "
                 "smpi/bw-factor to 1 so that these are the figures an MPI ping-pong sees; with --preset host "
                 "and a calibration that measured a ping-pong curve, smpi/lat-factor is lat_factor instead.",
    }


def platform_xml(p):
    """The SimGrid platform file (DTD version 4.1) of description p: one <cluster>."""
    attrs = [("id", "desync"), ("prefix", HOST_PREFIX), ("suffix", ""), ("radical", f"0-{p['nodes'] - 1}"),
             ("core", str(p["cores"])), ("speed", _num(p["speed_flops"]) + "f"),
             ("bw", _num(p["link_bandwidth_Bps"]) + "Bps"), ("lat", _num(p["link_latency_s"]) + "s"),
             ("sharing_policy", "SPLITDUPLEX"),
             ("loopback_bw", _num(p["loopback_bandwidth_Bps"]) + "Bps"),
             ("loopback_lat", _num(p["loopback_latency_s"]) + "s")]
    if p["topology"] == "crossbar":
        attrs += [("bb_bw", _num(p["backbone_bandwidth_Bps"]) + "Bps"), ("bb_lat", "0s"),
                  ("bb_sharing_policy", "FATPIPE")]
    else:
        attrs += [("topology", "FAT_TREE" if p["topology"] == "fat-tree" else "TORUS"),
                  ("topo_parameters", p["topo_parameters"])]
    what = f"{p['nodes']} nodes x {p['cores']} cores, {p['topology']}"
    if p["preset"]:
        what += f", preset {p['preset']}"
    body = "\n           ".join(f'{k}="{v}"' for k, v in attrs)
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  <!-- written by desync-sim: {what}; every figure and its source in platform.json -->\n"
            f"  <cluster {body}/>\n"
            "</platform>\n")


def hostfile_lines(cores, slots):
    """One host name per rank slot: node 0's cores first, then node 1's, ..."""
    return [f"{HOST_PREFIX}{s // cores}" for s in range(slots)]


def write_platform(folder, p, slots=None):
    """Writes folder/platform.xml, folder/hostfile (`slots` lines, default every slot) and
    folder/platform.json; returns their paths."""
    os.makedirs(folder, exist_ok=True)
    paths = {name: os.path.abspath(os.path.join(folder, name))
             for name in ("platform.xml", "hostfile", "platform.json")}
    with open(paths["platform.xml"], "w", encoding="utf-8") as f:
        f.write(platform_xml(p))
    with open(paths["hostfile"], "w", encoding="utf-8") as f:
        f.write("\n".join(hostfile_lines(p["cores"], p["slots"] if slots is None else slots)) + "\n")
    with open(paths["platform.json"], "w", encoding="utf-8") as f:
        json.dump(p, f, indent=2)
        f.write("\n")
    return paths


# --------------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------------


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
        "smpi/host-speed": _num(p["speed_flops"]) + "f",
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
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
    except OSError as e:
        raise UserError(f"--platform-dir: cannot read {path}: {e.strerror} (write it with desync-sim "
                        "platform)") from None
    except json.JSONDecodeError as e:
        raise UserError(f"--platform-dir: {path} is not JSON: {e}") from None
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


# --------------------------------------------------------------------------------------------------
# calibrate-host
# --------------------------------------------------------------------------------------------------

PINGPONG_C = r"""
/* desync-sim calibrate-host: half the round trip of ping-pongs between ranks 0 and 1, the least over
   several trials: 8 B and 1 MiB (latency and bandwidth), and 1 KiB .. 256 KiB by factors of 4 (the
   curve between them). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double pingpong(int rank, char* buf, int bytes, int reps) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < reps; i++) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  double t = (MPI_Wtime() - t0) / (2.0 * reps);
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int trials = argc > 1 ? atoi(argv[1]) : 5;
  const int big = 1 << 20;
  char* buf = calloc(big, 1);
  pingpong(rank, buf, 8, 200);
  pingpong(rank, buf, big, 5);
  double small_t = 1e30, big_t = 1e30;
  for (int i = 0; i < trials; i++) {
    double s = pingpong(rank, buf, 8, 2000), b = pingpong(rank, buf, big, 40);
    if (s < small_t) small_t = s;
    if (b < big_t) big_t = b;
  }
  if (rank == 0) printf("time_8B_s %.9e\ntime_1MiB_s %.9e\n", small_t, big_t);
  for (int bytes = 1024; bytes < big; bytes *= 4) {
    double least = 1e30;
    for (int i = 0; i < trials; i++) {
      double t = pingpong(rank, buf, bytes, bytes < 65536 ? 1000 : 40);
      if (t < least) least = t;
    }
    if (rank == 0) printf("time_%dB_s %.9e\n", bytes, least);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
"""


def latency_factors(latency, bandwidth, curve):
    """smpi/lat-factor ("bytes:factor;..."): for each measured size s, from s up to the next, the
    factor f with latency x f + s / bandwidth = the measured time (at least 1, so that a message is
    never cheaper than the 8 B one's latency)."""
    items = ["0:1"]
    for size in sorted(curve):
        f = max(1.0, (curve[size] - size / bandwidth) / latency)
        items.append(f"{size}:{f:.4g}")
    return ";".join(items)


def parse_lat_factor(text, where):
    """A smpi/lat-factor value, checked: "bytes:factor" pairs separated by ';', sizes rising from 0."""
    pairs = []
    for item in str(text).split(";"):
        m = re.fullmatch(r"(\d+):([0-9.eE+-]+)", item.strip())
        if not m:
            raise UserError(f"{where}: lat_factor '{text}' is not 'bytes:factor;...' (e.g. 0:1;4096:8.5)")
        pairs.append((int(m.group(1)), float(m.group(2))))
    if pairs[0][0] != 0 or any(b <= a for (a, _), (b, _) in zip(pairs, pairs[1:])) or any(not f > 0 for _, f in pairs):
        raise UserError(f"{where}: lat_factor '{text}' needs sizes rising from 0 and positive factors")
    return str(text)


def command_calibrate(args):
    mpicc, mpirun = shutil.which(args.mpicc), shutil.which(args.mpirun)
    for name, found in ((args.mpicc, mpicc), (args.mpirun, mpirun)):
        if found is None:
            raise UserError(f"{name} not found: calibrate-host compiles and runs an MPI ping-pong with the "
                            "machine's real MPI (give --mpicc/--mpirun)")
    if args.trials < 1:
        raise UserError("--trials: at least 1")
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    with tempfile.TemporaryDirectory(prefix="desync-sim-calibrate-") as tmp:
        src, exe = os.path.join(tmp, "pingpong.c"), os.path.join(tmp, "pingpong")
        with open(src, "w", encoding="utf-8") as f:
            f.write(PINGPONG_C)
        out = subprocess.run([mpicc, "-O2", src, "-o", exe], capture_output=True, text=True)
        if out.returncode != 0:
            raise UserError(f"{args.mpicc} failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-1000:]}")
        cmd = [mpirun, "-np", "2", exe, str(args.trials)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            raise UserError(f"{shlex.join(cmd)} took more than {args.timeout:g} s") from None
        if out.returncode != 0:
            raise UserError(f"{shlex.join(cmd)} exited {out.returncode}: {(out.stderr or out.stdout).strip()[-1000:]}")
    found = dict(re.findall(r"^(time_8B_s|time_1MiB_s) (\S+)$", out.stdout, re.M))
    if len(found) != 2:
        raise UserError(f"the ping-pong printed no timings: {out.stdout.strip()[-500:]}")
    small, big = float(found["time_8B_s"]), float(found["time_1MiB_s"])
    if not big > small:
        raise UserError(f"the 1 MiB ping-pong ({big:g} s) was not slower than the 8 B one ({small:g} s)")
    curve = {int(b): float(t) for b, t in re.findall(r"^time_(\d+)B_s (\S+)$", out.stdout, re.M) if int(b) >= 1024}
    curve[1 << 20] = big  # the bandwidth's own point: factor 1 there
    version = subprocess.run([mpirun, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    result = {
        "latency_s": small,
        "bandwidth_Bps": (1 << 20) / (big - small),
        "time_8B_s": small,
        "time_1MiB_s": big,
        "curve_s": {str(b): t for b, t in sorted(curve.items())},
        "lat_factor": latency_factors(small, (1 << 20) / (big - small), curve),
        "method": "MPI ping-pong between 2 ranks on this machine: half the round trip, least of the trials; "
                  "bandwidth = 1 MiB / (time_1MiB_s - latency_s), the model SimGrid applies to a message; "
                  "lat_factor: SimGrid's piecewise latency factor (smpi/lat-factor) that makes a message "
                  "of each measured size take its measured time (protocol switches: eager, rendezvous)",
        "trials": args.trials,
        "mpirun": shlex.join(cmd[:3] + ["pingpong", str(args.trials)]),
        "mpi": version[0] if version else None,
        "hostname": _platform.node(),
        "cpus": os.cpu_count(),
        "load": list(os.getloadavg()),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"{PROG}: wrote {args.output}: latency {small * 1e6:.3f} us, "
          f"bandwidth {result['bandwidth_Bps'] / 1e9:.2f} GB/s")
    return 0


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------

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


if __name__ == "__main__":
    sys.exit(main())
