"""The simulated cluster: the network presets and defaults, SimGrid's units, resolving a platform
description (platform.json) from the options, a calibration, a preset and the defaults, and writing
it as a SimGrid platform file (platform.xml) and a hostfile."""
import json
import os
import re

from .. import __version__
from ..errors import UserError
from .calibration import load_calibration
from .topology import (TOPOLOGIES, fat_tree_parameters, links_between_nodes, parse_fat_tree, parse_torus,
                       torus_dimensions)

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

HOST_PREFIX = "node-"

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


def simgrid_number(x):
    """A number as the platform file writes it: 12 significant digits, no trailing zeros."""
    return f"{x:.12g}"


# --------------------------------------------------------------------------------------------------
# The platform description
# --------------------------------------------------------------------------------------------------

PLATFORM_KEYS = ("nodes", "cores", "speed", "bandwidth", "latency", "loopback_bandwidth", "loopback_latency",
                 "topology", "topo_parameters")


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
             ("core", str(p["cores"])), ("speed", simgrid_number(p["speed_flops"]) + "f"),
             ("bw", simgrid_number(p["link_bandwidth_Bps"]) + "Bps"),
             ("lat", simgrid_number(p["link_latency_s"]) + "s"),
             ("sharing_policy", "SPLITDUPLEX"),
             ("loopback_bw", simgrid_number(p["loopback_bandwidth_Bps"]) + "Bps"),
             ("loopback_lat", simgrid_number(p["loopback_latency_s"]) + "s")]
    if p["topology"] == "crossbar":
        attrs += [("bb_bw", simgrid_number(p["backbone_bandwidth_Bps"]) + "Bps"), ("bb_lat", "0s"),
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
