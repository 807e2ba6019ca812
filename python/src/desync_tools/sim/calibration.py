"""desync-sim calibrate-host and its measurement file: an MPI ping-pong (pingpong.c, next to this
module) compiled with the machine's real mpicc and run with `mpirun -np 2`, the latency, bandwidth
and latency-factor curve (SimGrid's smpi/lat-factor) it gives, and reading that file back for
`platform --calibration FILE`."""
import datetime
import json
import os
import platform as _platform
import re
import shlex
import shutil
import subprocess
import tempfile
from importlib import resources

from ..errors import UserError
from .common import PROG, read_json_option

# The ping-pong's C source, shipped as package data.
PINGPONG_C = resources.files(__package__).joinpath("pingpong.c").read_text(encoding="utf-8")


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


def load_calibration(path):
    """The measurement of a calibrate-host file (--calibration): latency_s, bandwidth_Bps and, where it
    measured the curve, lat_factor."""
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
