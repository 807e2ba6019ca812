#!/usr/bin/env python3
"""Checks the files `desync jacobi` writes: the JSON record, .npy and .vti solution fields.

Standard library only. Runs the real executable under mpiexec:

  test_output.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR [CHECK ...]

CHECK is any of json, npy, vti, async (default: all). Exits 0 if every check passes.
"""
import ast
import json
import math
import os
import struct
import sys
import tempfile

from desync_test_util import arguments, check, conclude, is_number, run_desync


class Runner:
    def __init__(self, args):
        self.args = args

    def run(self, ranks, *options, expect_code):
        return run_desync(self.args, ranks, ("jacobi",), *options, expect_code=expect_code)


def read_npy(path):
    """Parses a NumPy 1.0 file by hand: returns (header dict, shape, raw data bytes, header length)."""
    with open(path, "rb") as f:
        raw = f.read()
    check(raw[:6] == b"\x93NUMPY", f"{path}: bad magic {raw[:6]!r}")
    check(raw[6:8] == b"\x01\x00", f"{path}: version {raw[6]}.{raw[7]}, expected 1.0")
    (hlen,) = struct.unpack("<H", raw[8:10])
    header = raw[10:10 + hlen].decode("latin1")
    check((10 + hlen) % 64 == 0, f"{path}: data offset {10 + hlen} not a multiple of 64")
    check(header.endswith("\n"), f"{path}: header does not end with a newline")
    d = ast.literal_eval(header.strip())
    check(d.get("descr") == "<f8", f"{path}: descr {d.get('descr')!r}")
    check(d.get("fortran_order") is False, f"{path}: fortran_order {d.get('fortran_order')!r}")
    shape = tuple(d.get("shape", ()))
    data = raw[10 + hlen:]
    n = 1
    for s in shape:
        n *= s
    check(len(data) == 8 * n, f"{path}: {len(data)} data bytes, expected {8 * n} for shape {shape}")
    return d, shape, data


def values(data):
    return struct.unpack(f"<{len(data) // 8}d", data)


def check_json_and_npy(r, work):
    nx, ny, nz = 13, 10, 9
    common = ["--global", f"{nx}x{ny}x{nz}", "--mode", "sync", "--tol", "1e-300", "--max-iters", "23",
              "--check-every", "5", "--quiet"]
    j2, n2, n1 = (os.path.join(work, f) for f in ("run2.json", "u2.npy", "u1.npy"))
    # A fixed number of iterations does not converge: exit code 1.
    r.run(2, *common, "--json", j2, "--save", n2, expect_code=1)
    r.run(1, *common, "--save", n1, expect_code=1)
    # Software prefetch forced on: reported, and the field is bitwise the same.
    j1p, n1p = os.path.join(work, "run1p.json"), os.path.join(work, "u1p.npy")
    r.run(1, *common, "--prefetch", "on", "--json", j1p, "--save", n1p, expect_code=1)

    with open(j2) as f:
        rec = json.load(f)
    for key in ("converged", "true_residual", "iterations", "wall_time", "ranks", "method", "per_rank",
                "schema_version", "details"):
        check(key in rec, f"JSON lacks key {key!r}")
    check(rec.get("schema") == "desync.run", f"schema {rec.get('schema')!r}")
    check(rec.get("schema_version") == 2 and isinstance(rec.get("schema_version"), int),
          f"schema_version {rec.get('schema_version')!r}")
    check(rec.get("time_split_shares") == [], f"time_split_shares {rec.get('time_split_shares')!r}: jacobi's parts all add up")
    check(rec.get("converged") is False, f"converged {rec.get('converged')!r}, expected false (bool)")
    check(is_number(rec.get("true_residual")) and rec["true_residual"] > 0,
          f"true_residual {rec.get('true_residual')!r}")
    it = rec.get("iterations", {})
    check(isinstance(it, dict) and all(is_number(it.get(k)) for k in ("min", "mean", "max")),
          f"iterations {it!r}")
    check(it.get("min") == it.get("mean") == it.get("max") == 23, f"sync iterations {it!r}, expected 23 everywhere")
    check(is_number(rec.get("wall_time")) and rec["wall_time"] >= 0, f"wall_time {rec.get('wall_time')!r}")
    check(rec.get("ranks") == 2, f"ranks {rec.get('ranks')!r}")
    check(rec.get("method") == "sync", f"method {rec.get('method')!r}")
    check(rec.get("global_size") == [nx, ny, nz], f"global_size {rec.get('global_size')!r}")
    check(rec.get("stop_reason") == "max_iters", f"stop_reason {rec.get('stop_reason')!r}")
    check(rec.get("outstanding_requests") == 0, f"outstanding_requests {rec.get('outstanding_requests')!r}")
    check(rec.get("tolerance") == 1e-300, f"tolerance {rec.get('tolerance')!r}")
    pr = rec.get("per_rank")
    if check(isinstance(pr, list) and len(pr) == 2, f"per_rank {pr!r:.200}"):
        check([p.get("rank") for p in pr] == [0, 1], "per_rank not ordered by rank")
        check(all(p.get("iterations") == 23 for p in pr), "per_rank iterations")
        cells = sum(p["local_size"][0] * p["local_size"][1] * p["local_size"][2] for p in pr)
        check(cells == nx * ny * nz, f"per_rank local sizes cover {cells} cells, not {nx * ny * nz}")
        # --prefetch auto: blocks this small fit in any cache.
        check(all(p.get("prefetch") is False for p in pr), "per_rank prefetch, expected false (auto, small block)")
        # The run's delay histogram is the sum of the ranks' (sync: one age 0 per neighbour per swap).
        det = rec.get("details", {})
        total = [sum(h) for h in zip(*(p.get("delay_histogram", []) for p in pr))]
        check(det.get("delay", {}).get("histogram") == total and len(total) == 64,
              f"details.delay.histogram {det.get('delay', {}).get('histogram')!r:.200}")
        check(sum(total) == sum(p.get("delay_count", -1) for p in pr) > 0, "delay histograms and delay_count disagree")
        check(det.get("polish_iterations") == 0 and det.get("threads") == 0, f"details {det!r:.300}")
    hist = rec.get("residual_history", {})
    lens = {k: len(hist.get(k, [])) for k in ("time", "iteration", "residual")}
    check(len(set(lens.values())) == 1 and lens["iteration"] > 0, f"residual_history lengths {lens}")
    check(hist.get("iteration", [None])[-1] == 23, f"last history iteration {hist.get('iteration')!r}")
    opts = rec.get("options", {})
    check(isinstance(opts, dict) and all(isinstance(v, str) for v in opts.values()), "options are not strings")
    check(opts.get("mode") == "sync" and opts.get("max-iters") == "23", f"options {opts!r:.300}")
    check(opts.get("prefetch") == "auto", f"options.prefetch {opts.get('prefetch')!r}")
    with open(j1p) as f:
        rec_p = json.load(f)
    check([p.get("prefetch") for p in rec_p.get("per_rank", [])] == [True], "--prefetch on: per_rank prefetch")
    check(rec_p.get("options", {}).get("prefetch") == "on", "--prefetch on: options.prefetch")

    d2, shape2, data2 = read_npy(n2)
    d1, shape1, data1 = read_npy(n1)
    check(shape2 == (nz, ny, nx), f"shape {shape2}, expected {(nz, ny, nx)}")
    check(shape1 == shape2, f"1-rank shape {shape1} != 2-rank shape {shape2}")
    check(data1 == data2, "the 2-rank field differs (bitwise) from the 1-rank field")
    check(read_npy(n1p)[2] == data1, "the field with --prefetch on differs (bitwise) from the one without")
    u = values(data2)
    check(all(math.isfinite(x) for x in u), "non-finite value in the saved field")
    check(all(0.0 <= x <= 1.0 for x in u), "saved values outside [0, 1] (boundary values are in [0, 1])")
    # The source is on the bottom face z = 0 (k = 0 is the first nx*ny block): there the field is
    # largest; it decays upwards, and is symmetric about the centre in x.
    layer = nx * ny
    bottom, top = max(u[:layer]), max(u[-layer:])
    check(bottom > 0.05 and top < bottom, f"max of bottom layer {bottom}, top layer {top}")
    for j in range(ny):
        for i in range(nx):
            a, b = u[j * nx + i], u[j * nx + (nx - 1 - i)]
            if abs(a - b) > 1e-12:
                check(False, f"bottom layer not symmetric in x at ({i},{j}): {a} vs {b}")
                return


def check_vti(r, work):
    nx, ny, nz = 7, 6, 5
    common = ["--global", f"{nx}x{ny}x{nz}", "--mode", "sync", "--tol", "1e-300", "--max-iters", "15", "--quiet"]
    vti, npy = os.path.join(work, "u.vti"), os.path.join(work, "u_ref.npy")
    # Overwrite an existing, longer file: the result must not keep its tail.
    with open(vti, "wb") as f:
        f.write(b"x" * 100000)
    r.run(2, *common, "--save", vti, expect_code=1)
    r.run(2, *common, "--save", npy, expect_code=1)
    with open(vti, "rb") as f:
        raw = f.read()
    check(raw.startswith(b'<?xml version="1.0"?>\n'), f"vti starts with {raw[:40]!r}")
    head = raw[:2000].decode("latin1")
    check('<VTKFile type="ImageData"' in head, "no VTKFile ImageData element")
    check('byte_order="LittleEndian"' in head and 'header_type="UInt64"' in head, "byte order / header type")
    check(f'WholeExtent="0 {nx - 1} 0 {ny - 1} 0 {nz - 1}"' in head, "WholeExtent")
    check('<DataArray type="Float64" Name="u" format="appended" offset="0"/>' in head, "DataArray element")
    marker = b'<AppendedData encoding="raw">'
    pos = raw.find(marker)
    if not check(pos >= 0, "no AppendedData element"):
        return
    us = raw.find(b"_", pos + len(marker))
    check(raw[pos + len(marker):us].strip() == b"", "text between AppendedData and '_'")
    (nbytes,) = struct.unpack("<Q", raw[us + 1:us + 9])
    check(nbytes == nx * ny * nz * 8, f"appended byte count {nbytes}, expected {nx * ny * nz * 8}")
    data = raw[us + 9:us + 9 + nbytes]
    tail = raw[us + 9 + nbytes:]
    check(tail == b"\n  </AppendedData>\n</VTKFile>\n", f"vti tail {tail[:80]!r} (file length {len(raw)})")
    _, _, npy_data = read_npy(npy)
    check(data == npy_data, "vti data differ from the .npy data of the same run (x fastest in both)")


def check_async(r, work):
    j = os.path.join(work, "async.json")
    # No practical iteration limit (a rank can sweep its small block 1e6 times while the other is
    # descheduled); the time limit guards against a stuck run.
    r.run(2, "--global", "16x12x10", "--mode", "async", "--tol", "1e-4", "--polish", "--reduction", "tree",
          "--max-iters", "1000000000000", "--time-limit", "60", "--json", j, "--quiet", expect_code=0)
    with open(j) as f:
        rec = json.load(f)
    check(rec.get("converged") is True, f"async: converged {rec.get('converged')!r}")
    check(rec.get("method") == "async" and rec.get("details", {}).get("reduction") == "tree", "async: method/reduction")
    check(is_number(rec.get("true_residual")) and rec["true_residual"] <= 1e-4,
          f"async: true_residual {rec.get('true_residual')!r} above the tolerance")
    check(rec.get("outstanding_requests") == 0, "async: outstanding requests")
    it = rec.get("iterations", {})
    check(0 < it.get("min", 0) <= it.get("mean", 0) <= it.get("max", 0), f"async: iterations {it!r}")
    check(len(rec.get("per_rank", [])) == 2, "async: per_rank length")


def check_schwarz(r, work):
    """desync schwarz: the saved 2D field at 2 ranks against the 1-rank run (one subdomain: the
    direct solve), and its section of the record."""
    j, n2, n1 = (os.path.join(work, f) for f in ("schwarz.json", "s2.npy", "s1.npy"))
    common = ("--global", "20x12", "--tol", "1e-10", "--quiet")
    run_desync(r.args, 2, ("schwarz",), *common, "--save", n2, "--json", j, expect_code=0)
    run_desync(r.args, 1, ("schwarz",), *common, "--save", n1, expect_code=0)
    _, shape2, d2 = read_npy(n2)
    _, shape1, d1 = read_npy(n1)
    check(shape2 == (1, 12, 20) and shape1 == shape2, f"schwarz: field shapes {shape2}, {shape1}")
    diff = max(abs(a - b) for a, b in zip(values(d2), values(d1)))
    check(diff < 1e-8, f"schwarz: 2-rank field differs from the direct solve by {diff}")
    with open(j) as f:
        rec = json.load(f)
    d = rec.get("details", {})
    check(rec.get("solver") == "schwarz" and rec.get("method") == "sync" and rec.get("converged") is True,
          "schwarz: solver/method/converged")
    check(rec.get("unknowns") == 240 and rec.get("outstanding_requests") == 0, "schwarz: unknowns, requests")
    check(is_number(d.get("alpha")) and d["alpha"] > 0 and d.get("alpha_option") == "auto" and d.get("overlap") == 1,
          f"schwarz: alpha/overlap {d!r}")
    check(d.get("factor_nonzeros", 0) > 0 and is_number(d.get("error_max")) and d["error_max"] < 0.02,
          f"schwarz: factor_nonzeros/error_max {d!r}")
    il = d.get("iterations_local", {})
    check(il.get("min") == il.get("max") == rec.get("iterations", {}).get("max"), f"schwarz: iterations_local {il!r}")
    check(rec.get("time_split_shares") == [] and "solve" in rec.get("time_split", {}), "schwarz: time split")
    # Per-rank local residual histories: in sync every iteration's, and the global history is exactly
    # sqrt(sum_p (share_p r_p)^2) of them, iteration by iteration.
    ranks = rec.get("per_rank", [])
    shares = [p.get("source_share", 0) for p in ranks]
    check(abs(sum(x * x for x in shares) - 1) < 1e-12, f"schwarz: source shares {shares}")
    hists = [p.get("residual_history", {}) for p in ranks]
    g = rec.get("residual_history", {})
    check(all(len(h.get("residual", [])) == len(g.get("residual", [])) > 1 for h in hists),
          f"schwarz: per-rank history lengths {[len(h.get('residual', [])) for h in hists]}")
    for k, gr in enumerate(g.get("residual", [])):
        est = math.sqrt(sum((sh * h["residual"][k]) ** 2 for sh, h in zip(shares, hists)))
        check(abs(est - gr) <= 1e-12 * max(gr, 1e-300), f"schwarz: iteration {k}: global {gr}, from ranks {est}")
    # Async with tree termination: the record's history is the estimate from the per-rank histories
    # merged by time; its last point is built from every rank's last value.
    ja = os.path.join(work, "schwarz_async.json")
    run_desync(r.args, 2, ("schwarz",), "--global", "20x12", "--mode", "async", "--quiet", "--json", ja, expect_code=0)
    with open(ja) as f:
        rec = json.load(f)
    check(rec.get("details", {}).get("termination") == "tree" and rec.get("converged") is True,
          "schwarz async: tree termination, converged")
    ranks = rec.get("per_rank", [])
    hists = [p.get("residual_history", {}) for p in ranks]
    for p, h in zip(ranks, hists):
        t = h.get("time", [])
        check(0 < len(t) <= p.get("iterations", 0) and all(a <= b for a, b in zip(t, t[1:])),
              f"schwarz async: rank {p.get('rank')} history of {len(t)} points for {p.get('iterations')} iterations")
    g = rec.get("residual_history", {})
    last = math.sqrt(sum((p["source_share"] * h["residual"][-1]) ** 2 for p, h in zip(ranks, hists)))
    check(len(g.get("residual", [])) > 0 and abs(g["residual"][-1] - last) <= 1e-12 * last,
          f"schwarz async: last estimate {g.get('residual', [None])[-1]}, from the ranks {last}")


def check_pde(r, work):
    """desync pde: --save with --save-every writes FILE_<step>.npy at 0, every S steps and the end,
    the record's pde section and per-face fields."""
    base, j = os.path.join(work, "u.npy"), os.path.join(work, "pde.json")
    run_desync(r.args, 2, ("pde",), "--global", "8", "--steps", "4", "--warmup", "0", "--mode", "bounded",
               "--max-delay", "2", "--save", base, "--save-every", "2", "--quiet", "--json", j, expect_code=0)
    for step in (0, 2, 4):
        path = os.path.join(work, f"u_{step:06d}.npy")
        check(os.path.exists(path), f"pde: {path} missing")
        if os.path.exists(path):
            _, shape, data = read_npy(path)
            check(shape == (8, 8, 8), f"pde: shape {shape}")
            check(all(math.isfinite(v) for v in values(data)), "pde: non-finite values saved")
    with open(j) as f:
        rec = json.load(f)
    d = rec.get("details", {})
    check(rec.get("solver") == "pde" and rec.get("method") == "bounded" and rec.get("converged") is True,
          "pde: solver/method/converged")
    check(d.get("steps") == 4 and d.get("timed_steps") == 4 and d.get("max_delay") == 2, f"pde: steps {d!r}")
    check(rec.get("outstanding_requests") == 0, "pde: requests left pending")
    for p in rec.get("per_rank", []):
        for face in ("xm", "xp", "ym", "yp", "zm", "zp"):
            h = p.get(f"delay_histogram_{face}")
            check(isinstance(h, list) and len(h) == 4 and sum(h) == 4 and p.get(f"delay_max_{face}", 99) <= 2,
                  f"pde: rank {p.get('rank')} face {face}: histogram {h}")
    check(set(rec.get("time_split", {})) >= {"compute", "send", "consume", "approximate", "noise"},
          f"pde: time split {rec.get('time_split')}")


def main():
    p = arguments()
    p.add_argument("checks", nargs="*", default=["json", "npy", "vti", "async", "schwarz", "pde"])
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    r = Runner(args)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        if "json" in args.checks or "npy" in args.checks:
            check_json_and_npy(r, work)
        if "vti" in args.checks:
            check_vti(r, work)
        if "async" in args.checks:
            check_async(r, work)
        if "schwarz" in args.checks:
            check_schwarz(r, work)
        if "pde" in args.checks:
            check_pde(r, work)
    return conclude("all output checks passed")


if __name__ == "__main__":
    sys.exit(main())
