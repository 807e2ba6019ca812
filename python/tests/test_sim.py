"""desync-sim: the platform generator (XML, hostfile, presets, topologies), run's sim.json and
command line (--dry-run, no SimGrid needed), bad input, and, where SimGrid's smpirun/smpicc are
installed, a real simulated ping-pong whose time follows the platform's latency."""
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import pytest

from desync_tools import sim
from desync_tools.sim import main


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def platform(tmp_path, capsys, *options):
    folder = tmp_path / "platform"
    code, out, err = run_cli(["platform", *options, "-o", str(folder)], capsys)
    assert code == 0, err
    with open(folder / "platform.json", encoding="utf-8") as f:
        description = json.load(f)
    return folder, description


def cluster(folder):
    root = ET.parse(folder / "platform.xml").getroot()
    assert root.tag == "platform" and root.get("version") == "4.1"
    (element,) = root.findall("cluster")
    return element


def dry_run(tmp_path, capsys, *options, program=("./app", "jacobi", "--mode", "async")):
    out_dir = tmp_path / "run"
    code, out, err = run_cli(["run", *options, "--out", str(out_dir), "--dry-run", "--", *program], capsys)
    assert code == 0, err
    with open(out_dir / "sim.json", encoding="utf-8") as f:
        return out_dir, json.load(f), out


def test_platform_xml_has_n_times_c_core_slots(tmp_path, capsys):
    folder, p = platform(tmp_path, capsys, "--nodes", "3", "--cores", "4")
    c = cluster(folder)
    first, last = (int(v) for v in c.get("radical").split("-"))
    assert (last - first + 1) * int(c.get("core")) == 12 == p["slots"]
    assert c.get("prefix") == "node-" and c.get("speed") == "1000000000f"
    assert c.get("bb_sharing_policy") == "FATPIPE" and c.get("topology") is None  # crossbar: a flat cluster
    assert c.get("loopback_bw") and c.get("loopback_lat")
    assert (folder / "hostfile").read_text().splitlines() == ["node-0"] * 4 + ["node-1"] * 4 + ["node-2"] * 4
    assert open(folder / "platform.xml").read().startswith("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                                                           '"https://simgrid.org/simgrid.dtd">')


def test_run_hostfile_has_one_line_per_rank_node_by_node(tmp_path, capsys):
    out_dir, s, _ = dry_run(tmp_path, capsys, "--np", "5", "--cores", "2")
    assert (out_dir / "hostfile").read_text().splitlines() == ["node-0", "node-0", "node-1", "node-1", "node-2"]
    assert s["platform"]["nodes"] == 3 and s["platform"]["origin"]["nodes"] == "ranks"  # ceil(5 / 2)
    assert s["ranks"] == 5 and s["rank_speed"] == [1.0] * 5 and s["costs"] == {} and s["config"] == {}


def test_host_speed_flops_follows_an_overridden_host_speed(tmp_path, capsys):
    # The validation's oversubscribed host: cores at half speed, a cost-model second still 1 Gf.
    _, s, _ = dry_run(tmp_path, capsys, "--np", "4", "--cores", "4", "--speed", "0.5Gf",
                      "--cfg", "smpi/host-speed:1000000000f")
    assert s["platform"]["speed_flops"] == 0.5e9 and s["host_speed_flops"] == 1e9
    _, s, _ = dry_run(tmp_path, capsys, "--np", "2", "--speed", "3Gf")
    assert s["host_speed_flops"] == 3e9


def test_preset_fills_values_and_options_override(tmp_path, capsys):
    _, p = platform(tmp_path, capsys, "--preset", "ib-edr", "--nodes", "4")
    assert p["preset"] == "ib-edr" and "IBTA" in p["source"]
    assert p["bandwidth_Bps"] == 12.5e9 and p["latency_s"] == pytest.approx(1e-6) and p["topology"] == "fat-tree"
    assert p["origin"]["bandwidth"] == "preset" and p["origin"]["nodes"] == "option"
    _, p = platform(tmp_path, capsys, "--preset", "ib-edr", "--nodes", "4", "--bandwidth", "100Gbps",
                    "--latency", "2us", "--topology", "torus", "--loopback-latency", "0.5us")
    assert p["bandwidth_Bps"] == 12.5e9 and p["latency_s"] == pytest.approx(2e-6) and p["topology"] == "torus"
    assert p["loopback_latency_s"] == pytest.approx(5e-7)
    assert p["origin"]["bandwidth"] == p["origin"]["latency"] == p["origin"]["topology"] == "option"


def test_every_preset_has_its_figures_and_source():
    for name, preset in sim.PRESETS.items():
        assert preset["topology"] in sim.TOPOLOGIES, name
        assert sim.parse_bandwidth(preset["bandwidth"]) > 0 and sim.parse_latency(preset["latency"]) > 0, name
        assert "pprox" in preset["source"], name  # the figures are stated as approximate
    host = sim.PRESETS["host"]
    assert host["nodes"] == 1 and host["cores"] == 2 and "calibrate-host" in host["source"]


def test_host_preset_with_calibration(tmp_path, capsys):
    cal = tmp_path / "host.json"
    cal.write_text(json.dumps({"latency_s": 2e-7, "bandwidth_Bps": 8e9}))
    _, p = platform(tmp_path, capsys, "--preset", "host", "--calibration", str(cal))
    assert p["nodes"] == 1 and p["cores"] == 2
    assert p["loopback_latency_s"] == p["latency_s"] == 2e-7
    assert p["loopback_bandwidth_Bps"] == p["bandwidth_Bps"] == 8e9
    assert p["origin"]["loopback_latency"] == p["origin"]["latency"] == "calibration"
    _, p = platform(tmp_path, capsys, "--preset", "host", "--calibration", str(cal), "--loopback-latency", "1us")
    assert p["loopback_latency_s"] == pytest.approx(1e-6) and p["origin"]["loopback_latency"] == "option"
    _, p = platform(tmp_path, capsys, "--preset", "ib-edr", "--nodes", "2", "--calibration", str(cal))
    assert p["loopback_latency_s"] == 2e-7 and p["latency_s"] == pytest.approx(1e-6)  # links stay the preset's


def test_latency_factors_reproduce_the_measured_curve():
    latency, bandwidth = 2e-7, 8e9
    curve = {1024: 4e-7, 4096: 3.4e-6, 1048576: 1.2e-4}
    text = sim.latency_factors(latency, bandwidth, curve)
    pairs = [tuple(float(x) for x in item.split(":")) for item in text.split(";")]
    assert [int(b) for b, _ in pairs] == [0, 1024, 4096, 1048576]
    for size, factor in pairs[1:]:
        # SimGrid's time for a message of `size` bytes: latency x factor + size / bandwidth
        modelled = latency * factor + size / bandwidth
        assert modelled == pytest.approx(max(curve[size], latency + size / bandwidth), rel=1e-3)
    assert pairs[-1][1] == 1.0  # 1 MiB defines the bandwidth: no extra latency there


def test_calibrated_latency_curve_reaches_smpi_only_on_the_host_preset(tmp_path, capsys):
    cal = tmp_path / "host.json"
    cal.write_text(json.dumps({"latency_s": 2e-7, "bandwidth_Bps": 8e9, "lat_factor": "0:1;4096:16.3"}))
    _, s, out = dry_run(tmp_path, capsys, "--preset", "host", "--calibration", str(cal), "--np", "2")
    assert s["platform"]["lat_factor"] == "0:1;4096:16.3" and "--cfg=smpi/lat-factor:0:1;4096:16.3" in out
    _, s, out = dry_run(tmp_path, capsys, "--preset", "ib-edr", "--calibration", str(cal), "--np", "2")
    assert s["platform"]["lat_factor"] == "0:1" and "--cfg=smpi/lat-factor:0:1 " in out  # links not measured
    cal.write_text(json.dumps({"latency_s": 2e-7, "bandwidth_Bps": 8e9, "lat_factor": "4096:16.3;0:1"}))
    assert "sizes rising from 0" in error_of(["platform", "--preset", "host", "--calibration", str(cal), "-o",
                                              str(tmp_path / "p")], capsys)
    cal.write_text(json.dumps({"latency_s": 2e-7, "bandwidth_Bps": 8e9, "lat_factor": "fast"}))
    assert "is not 'bytes:factor" in error_of(["platform", "--preset", "host", "--calibration", str(cal), "-o",
                                               str(tmp_path / "p")], capsys)


@pytest.mark.parametrize("nodes", [1, 2, 3, 4, 6, 7, 8, 12, 16, 30, 64, 97, 128, 256, 1000, 1024])
def test_topology_parameters_multiply_to_n(nodes):
    down = sim.parse_fat_tree(sim.fat_tree_parameters(nodes), nodes)
    assert math.prod(down) == nodes and len(down) <= 2
    dims = sim.torus_dimensions(nodes)
    assert math.prod(dims) == nodes and len(dims) <= 3
    assert nodes == 1 or 1 not in dims  # SimGrid 3.32 fails on dimensions of size 1


def test_derived_topologies_are_near_cubic_and_two_level():
    assert sim.torus_dimensions(64) == [4, 4, 4]
    assert sim.torus_dimensions(12) == [3, 2, 2]
    assert sim.torus_dimensions(7) == [7]
    assert sim.fat_tree_parameters(64) == "2;8,8;1,8;1,1"
    assert sim.fat_tree_parameters(6) == "2;3,2;1,3;1,1"
    assert sim.fat_tree_parameters(7) == "1;7;1;1"


@pytest.mark.parametrize("topology,parameters", [("crossbar", None), ("fat-tree", None), ("torus", None),
                                                 ("fat-tree", "2;4,4;1,2;1,2"), ("torus", "8,2")])
def test_topology_in_xml_and_mean_latency(tmp_path, capsys, topology, parameters):
    options = ["--nodes", "16", "--latency", "3us", "--topology", topology]
    if parameters:
        options += ["--topo-parameters", parameters]
    folder, p = platform(tmp_path, capsys, *options)
    c = cluster(folder)
    if topology == "crossbar":
        assert c.get("topology") is None and c.get("bb_lat") == "0s"
    else:
        assert c.get("topology") == {"fat-tree": "FAT_TREE", "torus": "TORUS"}[topology]
        assert c.get("topo_parameters") == p["topo_parameters"] == (parameters or p["topo_parameters"])
    # every link gets the same latency, chosen so that the mean over pairs of distinct nodes is --latency
    assert float(c.get("lat")[:-1]) * p["links_between_nodes"]["mean"] == pytest.approx(3e-6, rel=1e-9)
    lat = p["latency_between_nodes_s"]
    assert lat["least"] <= lat["mean"] <= lat["most"]


def test_links_between_nodes_by_counting():
    # a 4 x 4 torus: the mean ring distance of a 4-ring over distinct pairs, counted by hand
    pairs = [(a, b) for a in range(16) for b in range(16) if a != b]
    ring = lambda x, y: min(abs(x - y), 4 - abs(x - y))  # noqa: E731
    hops = [ring(a % 4, b % 4) + ring(a // 4, b // 4) for a, b in pairs]
    mean, fewest, most = sim.links_between_nodes("torus", 16, [4, 4])
    assert mean == pytest.approx(sum(hops) / len(hops)) and (fewest, most) == (1, 4)
    # a 2-level fat tree of 2 leaves x 3 nodes: 2 links under one leaf, 4 across
    mean, fewest, most = sim.links_between_nodes("fat-tree", 6, [3, 2])
    assert mean == pytest.approx((2 * 2 + 3 * 4) / 5) and (fewest, most) == (2, 4)


def test_units():
    assert sim.parse_bandwidth("12.5GBps") == 12.5e9
    assert sim.parse_bandwidth("100Gbps") == 12.5e9
    assert sim.parse_bandwidth("1KiBps") == 1024
    assert sim.parse_latency("1us") == pytest.approx(1e-6)
    assert sim.parse_latency("0.5ms") == pytest.approx(5e-4)
    assert sim.parse_latency("1e-6") == pytest.approx(1e-6)
    assert sim.parse_speed("2.5Gf") == 2.5e9 and sim.parse_speed("1e9") == 1e9


def test_rank_speed_slow_rank():
    assert sim.rank_speeds(4, 2, slow_rank=2, slow_factor=4.0) == [1.0, 1.0, 0.25, 1.0]


def test_rank_speed_spread_one_factor_per_node_and_seeded():
    a = sim.rank_speeds(10, 4, spread=0.2, seed=3)
    assert a == sim.rank_speeds(10, 4, spread=0.2, seed=3)  # deterministic
    assert a != sim.rank_speeds(10, 4, spread=0.2, seed=4)
    nodes = [a[0:4], a[4:8], a[8:10]]
    assert all(len(set(n)) == 1 for n in nodes) and len({n[0] for n in nodes}) == 3
    b = sim.rank_speeds(10, 4, spread=0.2, seed=3, slow_rank=5, slow_factor=2.0)
    assert b[5] == pytest.approx(a[5] / 2) and b[:5] == a[:5] and b[6:] == a[6:]


def test_core_speed_spread_gives_each_rank_a_quantile_in_a_seeded_order():
    # --core-speed-spread: the lognormal's quantiles at (i + 0.5) / R, so that 2 ranks always differ
    # (sigma 0.02: exp(-/+ 0.02 x 0.6745)), whatever the seed; the order is the seed's; on top of the
    # per-node factors and under a slow rank.
    two = sim.core_speed_factors(2, 0.02, seed=0)
    assert sorted(two) == pytest.approx([math.exp(-0.02 * 0.6744898), math.exp(0.02 * 0.6744898)])
    many = sim.core_speed_factors(1000, 0.05, seed=7)
    assert sorted(many) == sorted(sim.core_speed_factors(1000, 0.05, seed=8)) and many != sim.core_speed_factors(1000, 0.05, seed=8)
    logs = [math.log(f) for f in many]
    assert sum(logs) == pytest.approx(0.0, abs=1e-9) and statistics.pstdev(logs) == pytest.approx(0.05, rel=0.02)
    nodes = sim.rank_speeds(8, 4, spread=0.2, seed=3)
    both = sim.rank_speeds(8, 4, spread=0.2, seed=3, core_spread=0.05, slow_rank=1, slow_factor=2.0)
    cores = sim.core_speed_factors(8, 0.05, seed=3)
    expected = [n * c for n, c in zip(nodes, cores)]
    expected[1] /= 2.0
    assert both == pytest.approx(expected)


def test_calibrate_exchange_open_time_is_per_open_and_refuses_old_records(bench_script):
    calibrate = bench_script("bench/simgrid/calibrate.py")
    rec = {"per_rank": [{"exchange_opens": 3, "exchange_open_seconds": 90e-6},
                        {"exchange_opens": 3, "exchange_open_seconds": 120e-6}]}
    assert calibrate.exchange_open_time(rec) == pytest.approx(35e-6)
    with pytest.raises(SystemExit, match="exchange_opens"):
        calibrate.exchange_open_time({"per_rank": [{"rank": 0}]})


def test_calibrate_core_speed_spread_pools_each_runs_deviations(bench_script):
    # bench/simgrid/calibrate.py: the ranks of a run against that run's mean (a run slower as a whole
    # adds nothing), pooled: sqrt(sum of squares / sum of (ranks - 1)).
    calibrate = bench_script("bench/simgrid/calibrate.py")
    d = 0.01
    runs = [[math.exp(-d), math.exp(d)], [5 * math.exp(-d), 5 * math.exp(d)], [2.0, 2.0]]
    # squares: 2 d^2, 2 d^2, 0 over 3 degrees of freedom
    assert calibrate.core_speed_spread(runs) == pytest.approx(math.sqrt(4 * d * d / 3))
    assert calibrate.core_speed_spread([[1.0]]) == 0.0 and calibrate.core_speed_spread([]) == 0.0


def test_run_sim_json_and_command(tmp_path, capsys):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"jacobi.update": 2e-9, "halo.element": 1e-9}))
    out_dir, s, out = dry_run(tmp_path, capsys, "--preset", "ib-edr", "--cores", "16", "--np", "64", "--costs",
                              str(costs), "--slow-rank", "3", "--slow-factor", "2", "--cfg", "smpi/test:1e-6")
    assert set(s) >= {"platform", "ranks", "costs", "rank_speed", "smpirun", "config"}
    assert s["platform"]["preset"] == "ib-edr" and s["platform"]["nodes"] == 4 and s["ranks"] == 64
    assert s["costs"] == {"jacobi.update": 2e-9, "halo.element": 1e-9}
    assert len(s["rank_speed"]) == 64 and s["rank_speed"][3] == 0.5 and s["rank_speed"].count(1.0) == 63
    assert s["config"] == {"smpi/test": "1e-6"}
    assert s["host_speed_flops"] == 1e9  # a second of the cost model, in flops (smpi/host-speed)
    cmd = s["smpirun"]
    assert cmd[1:7] == ["-np", "64", "-platform", str(out_dir / "platform.xml"), "-hostfile", str(out_dir / "hostfile")]
    for item in ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/host-speed:1000000000f", "--cfg=smpi/iprobe:1e-8",
                 "--cfg=smpi/privatization:dlopen", "--cfg=smpi/test:1e-6", "--cfg=smpi/grow-injected-times:no"):
        assert item in cmd
    assert "--cfg=smpi/test:1e-8" not in cmd  # the user's item replaces desync-sim's
    assert not any(c.startswith("--cfg=smpi/allgather") for c in cmd)
    assert cmd[-4:] == ["./app", "jacobi", "--mode", "async"]
    assert out.startswith(f"DESYNC_SIM={out_dir / 'sim.json'} ")
    with open(out_dir / "platform.json", encoding="utf-8") as f:
        assert json.load(f) == s["platform"]


def test_run_costs_file_with_a_costs_object(tmp_path, capsys):
    costs = tmp_path / "costs.json"  # as bench/simgrid/calibrate.py writes it
    costs.write_text(json.dumps({"costs": {"jacobi.update": 3e-10}, "calibration": {"date": "today"}}))
    _, s, _ = dry_run(tmp_path, capsys, "--np", "2", "--costs", str(costs))
    assert s["costs"] == {"jacobi.update": 3e-10}
    assert s["costs_file"] == {"file": str(costs), "calibration": {"date": "today"}}
    costs.write_text(json.dumps({"jacobi.update": "fast"}))
    assert "not seconds per unit" in error_of(["run", "--np", "2", "--costs", str(costs), "--dry-run", "--", "./a"],
                                              capsys)


def test_run_large_uses_rdb_allgather(tmp_path, capsys):
    _, s, _ = dry_run(tmp_path, capsys, "--np", str(sim.ALLGATHER_RDB_RANKS), "--cores", "16")
    assert "--cfg=smpi/allgather:rdb" in s["smpirun"]


def test_run_from_platform_dir(tmp_path, capsys):
    folder, p = platform(tmp_path, capsys, "--preset", "eth-10g", "--nodes", "2", "--cores", "3")
    out_dir, s, _ = dry_run(tmp_path, capsys, "--platform-dir", str(folder), "--np", "4")
    assert s["platform"] == p and s["smpirun"][4] == str(folder / "platform.xml")
    assert (out_dir / "hostfile").read_text().splitlines() == ["node-0"] * 3 + ["node-1"]


def error_of(args, capsys):
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("desync-sim: error: "), err
    return lines[0]


@pytest.mark.parametrize("args,words", [
    (["platform", "--preset", "infiniband", "-o", "x"], "unknown preset 'infiniband'"),
    (["platform", "--nodes", "0", "-o", "x"], "at least 1"),
    (["platform", "--nodes", "-3", "-o", "x"], "at least 1"),
    (["platform", "--nodes", "4", "--cores", "0", "-o", "x"], "at least 1"),
    (["platform", "--nodes", "4", "--topology", "hypercube", "-o", "x"], "unknown topology 'hypercube'"),
    (["platform", "--nodes", "4", "--topology", "torus", "--topo-parameters", "2,3", "-o", "x"], "multiply to 6"),
    (["platform", "--nodes", "4", "--topology", "torus", "--topo-parameters", "4,1", "-o", "x"], "size 1"),
    (["platform", "--nodes", "4", "--topology", "fat-tree", "--topo-parameters", "2;2,2;1,2", "-o", "x"], "LEVELS"),
    (["platform", "--nodes", "4", "--topo-parameters", "2,2", "-o", "x"], "only for"),
    (["platform", "--nodes", "4", "--bandwidth", "fast", "-o", "x"], "not a bandwidth"),
    (["platform", "--nodes", "4", "--latency", "1 parsec", "-o", "x"], "not a latency"),
    (["platform", "--preset", "ib-edr", "-o", "x"], "--nodes"),
    (["run", "--np", "4", "--nodes", "1", "--cores", "2", "--dry-run", "--", "./app"], "rank slots"),
    (["run", "--np", "4", "--slow-rank", "4", "--slow-factor", "2", "--dry-run", "--", "./app"], "not a rank"),
    (["run", "--np", "4", "--slow-rank", "1", "--dry-run", "--", "./app"], "go together"),
    (["run", "--np", "4", "--cfg", "smpi/test", "--dry-run", "--", "./app"], "KEY:VALUE"),
    (["run", "--np", "4", "--dry-run", "--", "./app", "two words"], "white space"),
    (["run", "--np", "4", "--out", "a b", "--dry-run", "--", "./app"], "white space"),
    (["run", "--np", "4", "--dry-run"], "after --"),
    (["run", "--np", "4", "--core-speed-spread", "-0.1", "--dry-run", "--", "./app"], "--core-speed-spread: must be"),
    (["run", "--np", "4", "--core-speed-spread", "1.5", "--dry-run", "--", "./app"], "below 1"),
])
def test_bad_input_one_message(tmp_path, capsys, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    assert words in error_of(args, capsys)


def test_missing_smpirun_one_message(tmp_path, capsys):
    exe = tmp_path / "app"
    exe.write_text("")
    message = error_of(["run", "--np", "2", "--smpirun", str(tmp_path / "no-smpirun"), "--", str(exe)], capsys)
    assert "not found" in message and "smpirun" in message


def test_bad_calibration_file(tmp_path, capsys):
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"latency_s": 1e-6}))
    assert "bandwidth_Bps" in error_of(["platform", "--preset", "host", "--calibration", str(cal), "-o",
                                        str(tmp_path / "p")], capsys)


# ---------------------------------------------------------------------------------------------
# With SimGrid installed: a real simulated run.
# ---------------------------------------------------------------------------------------------

PINGPONG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char buf[8] = {0};
  int peer = size - 1, reps = 100;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < reps; i++) {
    if (rank == 0) {
      MPI_Send(buf, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == peer) {
      MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  double t = (MPI_Wtime() - t0) / (2.0 * reps);
  double x = rank, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const char* sim = getenv("DESYNC_SIM");
  if (rank == 0) printf("latency_s %.9e sum %g ranks %d sim %s\n", t, y, size, sim ? sim : "-");
  MPI_Finalize();
  return argc > 1 ? atoi(argv[1]) : 0;
}
"""


@pytest.fixture(scope="module")
def smpi_pingpong(tmp_path_factory):
    if not (shutil.which("smpirun") and shutil.which("smpicc")):
        pytest.skip("SimGrid's smpirun/smpicc not installed (Debian: libsimgrid-dev)")
    d = tmp_path_factory.mktemp("smpi")
    src, exe = d / "pingpong.c", d / "pingpong"
    src.write_text(PINGPONG)
    out = subprocess.run(["smpicc", "-O2", str(src), "-o", str(exe)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return str(exe)


def simulate(tmp_path, exe, *options, args=()):
    out_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "desync_tools.sim", "run", *options, "--out", str(out_dir), "--", exe, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return out, str(out_dir / "sim.json")


def test_simulated_pingpong_follows_latency(tmp_path, smpi_pingpong):
    times = {}
    for lat in ("1us", "10us"):
        out, sim_json = simulate(tmp_path, smpi_pingpong, "--np", "4", "--latency", lat)
        assert out.returncode == 0, out.stderr[-2000:]
        fields = out.stdout.split()
        i = fields.index("latency_s")
        times[lat] = float(fields[i + 1])
        assert fields[i + 3] == "6" and fields[i + 5] == "4"  # the allreduce's sum over 4 ranks
        assert fields[i + 7] == os.path.abspath(sim_json)  # DESYNC_SIM reached the ranks
        assert "desync-sim: wall time " in out.stderr
    # one rank per node: rank 0 and rank 3 are on different nodes of a crossbar, latency as given
    assert times["1us"] == pytest.approx(1e-6, rel=0.1)
    assert times["10us"] == pytest.approx(1e-5, rel=0.1)
    assert times["10us"] > 5 * times["1us"]


def test_simulated_exit_code_is_the_programs(tmp_path, smpi_pingpong):
    out, _ = simulate(tmp_path, smpi_pingpong, "--np", "2", args=("3",))
    assert out.returncode == 3 and "desync-sim: wall time " in out.stderr


def test_calibrate_host(tmp_path, capsys):
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        pytest.skip("mpicc/mpirun not installed")
    path = tmp_path / "host.json"
    code, out, err = run_cli(["calibrate-host", "-o", str(path), "--trials", "2"], capsys)
    assert code == 0, err
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    assert 0 < data["latency_s"] < 1e-3 and data["bandwidth_Bps"] > 1e7
    assert sorted(int(b) for b in data["curve_s"]) == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert data["lat_factor"].startswith("0:1;1024:")
    _, p = platform(tmp_path, capsys, "--preset", "host", "--calibration", str(path))
    assert p["loopback_latency_s"] == data["latency_s"]


def test_calibrate_names_the_kinds_whose_runs_spread(bench_script):
    # bench/simgrid/calibrate.py: a kind whose runs differ by more than --max-spread is reported (on
    # 2026-11-26 a loaded machine made cg.pipecg.vector 2.5 times its value of the morning).
    calibrate = bench_script("bench/simgrid/calibrate.py")
    spread = {"quiet": (1.0e-9, 1.2e-9), "busy": (1.7e-9, 4.3e-9), "free": (0.0, 0.0), "edge": (1.0, 1.25)}
    noisy = calibrate.noisy_kinds(spread, 1.25)
    assert set(noisy) == {"busy"} and math.isclose(noisy["busy"], 4.3 / 1.7)
    assert set(calibrate.noisy_kinds(spread, 1.1)) == {"quiet", "busy", "edge"}


def test_calibrate_measures_in_rounds_so_a_busy_spell_leaves_the_medians_alone(bench_script):
    # bench/simgrid/calibrate.py runs every kind once per round. Three consecutive slow runs (a busy
    # spell) then slow one run of each of three kinds, and every median stays at the quiet value; run
    # kind by kind, the same spell took three of one kind's five runs and its median with them.
    calibrate = bench_script("bench/simgrid/calibrate.py")
    calls = []

    def run_one(ranks, argv):
        calls.append(argv[0])
        slow = 3 <= len(calls) <= 5  # the 3rd to 5th runs of the calibration
        return {"t": 2.5 if slow else 1.0}, f"mpirun -np {ranks} desync {argv[0]}"

    specs = [(2, [k], {k: (lambda r: r["t"]), k + ".twice": (lambda r: 2 * r["t"])}) for k in ("a", "b", "c", "d")]
    measured = calibrate.measure_rounds(types.SimpleNamespace(reps=5, max_reps=5, max_spread=1.25), specs, run_one)
    assert calls == ["a", "b", "c", "d"] * 5
    assert set(measured) == {"a", "b", "c", "d", "a.twice", "b.twice", "c.twice", "d.twice"}
    for k in "abcd":
        assert measured[k][0] == 1.0 and measured[k + ".twice"][0] == 2.0
        assert measured[k][1] == f"mpirun -np 2 desync {k}"
    assert measured["c"][2] == (1.0, 2.5) and measured["b"][2] == (1.0, 1.0)


def test_calibrate_runs_a_noisy_kind_again_up_to_max_reps(bench_script):
    # A kind whose first --reps runs spread by more than --max-spread gets further runs of its own
    # (up to --max-reps in all); steady kinds are not run again.
    calibrate = bench_script("bench/simgrid/calibrate.py")
    calls = []
    noisy = [1.0, 2.4, 1.1, 2.2, 1.05, 1.0, 1.02, 0.98, 1.01, 2.3, 1.0]  # the noisy kind's 11 runs

    def run_one(ranks, argv):
        calls.append(argv[0])
        t = noisy[calls.count("noisy") - 1] if argv[0] == "noisy" else 1.0
        return {"t": t}, argv[0]

    specs = [(2, ["steady"], {"steady": lambda r: r["t"]}), (2, ["noisy"], {"noisy": lambda r: r["t"]})]
    args = types.SimpleNamespace(reps=5, max_reps=11, max_spread=1.25)
    measured = calibrate.measure_rounds(args, specs, run_one)
    assert calls.count("steady") == 5 and calls.count("noisy") == 11
    assert calls[:10] == ["steady", "noisy"] * 5 and calls[10:] == ["noisy"] * 6
    assert measured["noisy"][3] == 11 and measured["steady"][3] == 5
    # Median of the 11 runs: 1.02 (of the first five alone it was 1.1).
    assert measured["noisy"][0] == 1.02 and measured["noisy"][2] == (0.98, 2.4)
    # --max-reps equal to --reps: no further runs.
    calls.clear()
    calibrate.measure_rounds(types.SimpleNamespace(reps=5, max_reps=5, max_spread=1.25), specs, run_one)
    assert calls.count("noisy") == 5


def test_validate_runs_the_real_cases_in_rounds_and_pairs_the_ratio_by_round(bench_script):
    # bench/simgrid/validate.py runs every real case once per round (alternating the order), so a busy
    # spell slows a run or two of each case, not most runs of one; a variant's ratio to its reference
    # is the median of each round's ratio, so a change of load between rounds cancels.
    validate = bench_script("bench/simgrid/validate.py")
    cases = [(2, "jacobi", [("sync", ["--mode", "sync"]), ("async", ["--mode", "async"])]),
             (2, "cg", [("cg", ["--method", "cg"]), ("pipecg", ["--method", "pipecg"])])]
    load = [1.0, 0.8, 1.3, 1.25, 0.9]  # the machine's load in each round (a time factor)
    calls = []

    def run_real(ranks, solver, argv):
        calls.append(argv[1])
        i = (len(calls) - 1) // 4  # the round
        if 5 <= len(calls) <= 7:  # a busy spell over three consecutive runs of the second round
            return {"iterations": 10, "time": 5.0}
        t = {"sync": 1.0, "async": 0.9, "cg": 2.0, "pipecg": 2.2}[argv[1]]
        return {"iterations": 10, "time": t * load[i]}

    runs = validate.measure_real_rounds(cases, 5, run_real)
    assert calls == (["sync", "async", "cg", "pipecg", "pipecg", "cg", "async", "sync"] * 3)[:20]
    assert [len(v) for v in runs.values()] == [5, 5, 5, 5]
    # No median is a run of the spell.
    assert all(statistics.median(r["time"] for r in v) != 5.0 for v in runs.values())
    assert statistics.median(r["time"] for r in runs[(2, "jacobi", "sync")]) == 1.0
    # Paired by round: exactly 0.9 and 1.1 in the four quiet rounds; the spell's round is one of five.
    jac = validate.paired_ratio(runs[(2, "jacobi", "async")], runs[(2, "jacobi", "sync")])
    cg = validate.paired_ratio(runs[(2, "cg", "pipecg")], runs[(2, "cg", "cg")])
    assert math.isclose(jac, 0.9) and math.isclose(cg, 1.1)
    # A ratio of the two medians would not be: the load's drift between rounds shows in it.
    med = lambda k: statistics.median(r["time"] for r in runs[k])  # noqa: E731
    assert not math.isclose(med((2, "jacobi", "async")) / med((2, "jacobi", "sync")), 0.9, rel_tol=1e-3)


def test_validate_ratio_criterion_same_side_or_within_the_real_rounds_when_level(bench_script):
    # bench/simgrid/validate.py: the relaxed variant's ratio to its reference must fall on the same
    # side of 1 in the real and the simulated run; where the real rounds themselves fall on both
    # sides of 1 (the two variants are level on this machine), the simulated ratio must lie within
    # the real rounds' range instead.
    validate = bench_script("bench/simgrid/validate.py")
    assert validate.ratios_agree([0.85, 0.9, 0.88], 0.87) == (True, "same side")
    assert validate.ratios_agree([1.2, 1.3], 1.1) == (True, "same side")
    assert validate.ratios_agree([0.85, 0.9, 0.88], 1.05) == (False, "differ")
    # Level: the rounds straddle 1; 0.999 lies within 0.97-1.04, 0.95 does not.
    assert validate.ratios_agree([0.97, 1.001, 1.04], 0.999) == (True, "level")
    assert validate.ratios_agree([0.97, 1.001, 1.04], 0.95) == (False, "differ")
    # Rounds all above 1: no range rule, a simulated ratio below 1 differs however close.
    assert validate.ratios_agree([1.001, 1.002, 1.004], 0.999) == (False, "differ")
    # The second PDE case runs the pde solver.
    assert validate.solver_of("pde+jitter") == "pde" and validate.solver_of("schwarz") == "schwarz"
    assert [c[0] for c in validate.CASES].count("pde+jitter") == 1


def test_validate_warns_of_a_stale_or_foreign_cost_model(bench_script):
    # bench/simgrid/validate.py: the host's speed is part of the model, so a cost model made on
    # another machine, or more than --max-costs-age minutes before, is named before validating.
    validate = bench_script("bench/simgrid/validate.py")
    now = datetime.datetime(2026, 11, 26, 16, 20, 0)
    costs = {"costs": {}, "calibration": {"date": "2026-11-26T16:05:00", "machine": {"host": "vm"}}}
    assert validate.calibration_warnings(costs, now, "vm", 30) == []
    old = validate.calibration_warnings({**costs, "calibration": {**costs["calibration"], "date": "2026-11-26T14:43:39"}},
                                        now, "vm", 30)
    assert len(old) == 1 and "calibrated 96 minutes ago" in old[0]
    foreign = validate.calibration_warnings(costs, now, "node16", 30)
    assert len(foreign) == 1 and "calibrated on vm, not on this machine (node16)" in foreign[0]
    # No date or machine recorded (a hand-made model): nothing to check.
    assert validate.calibration_warnings({"costs": {}}, now, "vm", 30) == []
    assert validate.calibration_warnings({"costs": {}, "calibration": {"date": "garbage"}}, now, "vm", 30) == []


def test_calibrate_message_overhead_subtracts_the_latency_once_per_exchange(bench_script):
    # bench/simgrid/calibrate.py's halo.message: (halo time - messages sent x latency) / (messages sent
    # + taken in), per rank, averaged; never negative; a rank with two neighbours is refused (its
    # exchanges overlap two latencies).
    calibrate = bench_script("bench/simgrid/calibrate.py")
    rank = lambda r, halo, n=1: {"rank": r, "neighbours": n, "messages_sent": 1000, "messages_received": 1000,
                                 "time": {"halo": halo}}
    rec = {"per_rank": [rank(0, 1000 * 1.0e-6), rank(1, 1000 * 1.2e-6)]}
    # rank 0: (1e-3 - 1000 x 0.2e-6) / 2000 = 0.4e-6; rank 1: 0.5e-6
    assert calibrate.message_overhead(rec, 0.2e-6) == pytest.approx(0.45e-6)
    assert calibrate.message_overhead({"per_rank": [rank(0, 1000 * 0.1e-6)]}, 0.2e-6) == 0.0
    with pytest.raises(SystemExit, match="one neighbour"):
        calibrate.message_overhead({"per_rank": [rank(0, 1e-3, n=2)]}, 0.2e-6)


def test_simulated_studies_are_sweeps_of_the_experiment_format(bench_script):
    """bench/simgrid/studies.toml, read by the experiment loader: reproduce.py's two sets, every run
    named once in its study, the slowed core in the middle of its process grid, and the simulation
    settings joined from the options and the bundles."""
    rp = bench_script("bench/simgrid/reproduce.py")
    quick, full = rp.studies(False), rp.studies(True)
    assert [s for s, _, _ in quick] == ["jacobi-weak", "jacobi-slow-core", "pde-jitter", "cg-family", "cg-strong",
                                        "cg-overlap", "schwarz-weak"]
    assert sum(len(rows) for _, _, rows in quick) == 34 and sum(len(rows) for _, _, rows in full) == 250
    assert len(full) == 22
    for study, paper, rows in full:
        labels = [label for label, _, _, _ in rows]
        assert paper and len(set(labels)) == len(labels), study
        assert all(argv[0] in ("jacobi", "pde", "cg", "schwarz") and "--json" not in argv for _, _, argv, _ in rows)
    runs = {label: (ranks, argv, sim) for _, _, rows in full for label, ranks, argv, sim in rows}
    # jitter of the size of Yamazaki et al.'s noise: a small chance per iteration, in both Schwarz studies
    for label in ("schwarz sync P=256 slight jitter", "schwarz async P=64 2 ms slight jitter"):
        argv = runs[label][1]
        assert argv[argv.index("--noise") + 1] == "jitter", label
        assert float(argv[argv.index("--jitter-probability") + 1]) == 2e-4, label
    for label, (ranks, argv, _) in runs.items():
        if "--slow-rank" in argv:
            px, py, pz = map(int, argv[argv.index("--dims") + 1].split("x"))
            assert px * py * pz == ranks
            assert int(argv[argv.index("--slow-rank") + 1]) == px // 2 + px * (py // 2 + py * (pz // 2)), label
            assert f"rank {px // 2 + px * (py // 2 + py * (pz // 2))} slowed 2x" in label
    ranks, argv, sim = runs["schwarz sync gdsw P=256"]
    assert ranks == 256 and sim == ["--cfg", "maxmin/precision:1e-4", "--cfg", "smpi/reduce:binomial"]
    assert argv[:3] == ["schwarz", "--local", "16"] and "--coarse-reuse" not in argv
    ranks, argv, sim = runs["schwarz async gdsw P=64"]
    assert sim == [] and argv[argv.index("--coarse-reuse") + 1] == "0"
    # the asynchronous two-level runs name their fan-in: the one their records measured (8 unless the
    # label says), or auto, the model's
    for label, (_, argv, _) in runs.items():
        if label.startswith("schwarz async ") and "--coarse" in argv and " none" not in label:
            fan = argv[argv.index("--coarse-fan-in") + 1]
            assert fan == ("255" if "flat tree" in label else label.split("fan-in ")[1] if "fan-in " in label else "8"), label
    # coarse-large (64² points per subdomain, 64 and 256 ranks) and coarse-large128 (128², 64 ranks):
    # the fixed-point form with the optimized condition, its asynchronous form with --coarse-reuse 1
    # (its only setting); the asynchronous GDSW runs at the fan-in the other studies default to. The
    # fixed-point form also with beta = 1/(1 + alpha h) held at 0.9: sync and async at 64 ranks, sync
    # only at 256
    for study, local, counts, beta_runs in (("coarse-large", "64", {64, 256}, 6), ("coarse-large128", "128", {64}, 4)):
        large = next(rows for s, _, rows in full if s == study)
        assert len(large) == 12 * len(counts) + beta_runs and {r for _, r, _, _ in large} == counts, study
        for label, ranks, argv, _ in large:
            assert argv[argv.index("--local") + 1] == local, label
            assert (argv[argv.index("--noise") + 1] == "jitter") == label.endswith(" jitter"), label
            mode = argv[argv.index("--mode") + 1]
            assert f" {mode} P=" in label, label
            if "fixed-point beta 0.9" in label:  # alpha = (1/beta - 1)/h, h = 1/(q m + 1) on a q x q grid
                h = 1.0 / (math.isqrt(ranks) * int(local) + 1)
                assert float(argv[argv.index("--alpha") + 1]) == pytest.approx((1 / 0.9 - 1) / h, rel=1e-8), label
                assert mode == "sync" or ranks == 64, label
            elif "fixed-point" in label:
                assert argv[argv.index("--alpha") + 1] == "auto", label
                assert ("--coarse-reuse" in argv) == (mode == "async"), label
                if mode == "async":
                    assert argv[argv.index("--coarse-reuse") + 1] == "1", label
            if label.startswith("gdsw async") or (label.startswith("gdsw fixed-point") and mode == "async"):
                assert argv[argv.index("--coarse-fan-in") + 1] == "8", label
    assert runs["pipecg progress (Alg. 3i) P=64 128^3"][1][-6:] == ["--reduction", "doubling", "--progress", "test",
                                                                   "--test-interval", "512"]
    # coarse-weak is ordered by rank count (study_order = "ranks"), the file's order at each count
    coarse = next(rows for s, _, rows in full if s == "coarse-weak")
    assert [r for _, r, _, _ in coarse] == sorted(r for _, r, _, _ in coarse)
    assert [label for label, r, _, _ in coarse if r == 64][:4] == ["schwarz sync none P=64", "schwarz async none P=64",
                                                                   "schwarz sync nicolaides P=64",
                                                                   "schwarz async nicolaides P=64"]
