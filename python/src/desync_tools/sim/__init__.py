"""desync-sim: runs desync (or any MPI program built for SimGrid's SMPI) on a simulated cluster.

Three commands (docs/simulation.md):
  platform        writes a SimGrid platform (platform.xml), a hostfile and platform.json describing
                  every figure, for N nodes x C cores, from a preset and/or explicit options;
  run             generates the platform for R ranks, writes sim.json (the platform, the cost model,
                  one speed factor per rank, the smpirun command) and runs the program under smpirun
                  with DESYNC_SIM naming sim.json;
  calibrate-host  measures this machine's intra-node MPI latency and bandwidth with the real MPI
                  (mpicc + mpirun ping-pong), for `platform --preset host --calibration FILE`.

The modules: platform (presets, units, the platform description and its files), topology (fat tree,
torus, links between nodes), run (the run command: rank speeds, SimGrid configuration, sim.json,
smpirun), calibration (calibrate-host, its ping-pong pingpong.c and its measurement file), common
(the command's name, reading an option's JSON file) and cli (the command line, `main`). This package
gives every public name of them; `python -m desync_tools.sim` is desync-sim.

Checked against SimGrid 3.32 (Debian libsimgrid-dev). Standard library only.
"""
from ..errors import UserError, run_main
from .calibration import PINGPONG_C, command_calibrate, latency_factors, load_calibration, parse_lat_factor
from .cli import EPILOG, build_parser, main
from .common import PROG, read_json_option
from .platform import (DEFAULT_LOOPBACK_BANDWIDTH, DEFAULT_LOOPBACK_LATENCY, DEFAULT_SPEED, DEFAULTS,
                       DEFAULTS_SOURCE, HOST_PREFIX, LOOPBACK_SOURCE, PLATFORM_KEYS, PRESETS, hostfile_lines,
                       parse_bandwidth, parse_latency, parse_speed, platform_xml, resolve_platform, simgrid_number,
                       write_platform)
from .run import (ALLGATHER_RDB_RANKS, command_run, core_speed_factors, load_costs, parse_cfg, rank_speeds,
                  simulation_config)
from .topology import (TOPOLOGIES, fat_tree_parameters, links_between_nodes, parse_fat_tree, parse_torus,
                       torus_dimensions)

__all__ = [
    "UserError", "run_main", "PROG", "read_json_option", "main", "build_parser", "EPILOG",
    # platform and topology
    "DEFAULT_SPEED", "DEFAULT_LOOPBACK_BANDWIDTH", "DEFAULT_LOOPBACK_LATENCY", "LOOPBACK_SOURCE", "PRESETS",
    "DEFAULTS", "DEFAULTS_SOURCE", "HOST_PREFIX", "PLATFORM_KEYS", "parse_speed", "parse_bandwidth",
    "parse_latency", "simgrid_number", "resolve_platform", "platform_xml", "hostfile_lines", "write_platform",
    "TOPOLOGIES", "fat_tree_parameters", "parse_fat_tree", "torus_dimensions", "parse_torus",
    "links_between_nodes",
    # run
    "ALLGATHER_RDB_RANKS", "core_speed_factors", "rank_speeds", "parse_cfg", "simulation_config", "load_costs",
    "command_run",
    # calibrate-host
    "PINGPONG_C", "latency_factors", "parse_lat_factor", "load_calibration", "command_calibrate",
]
