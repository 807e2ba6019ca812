"""bench/bounded_loop.py: the variants it launches, its pairing with the synchronous run of the same
round, and its refusal of bad variants (the program itself is tested by CTest,
bench_bounded_loop_*)."""
import json
import os
import subprocess
import sys
import textwrap

from conftest import REPO

SCRIPT = os.path.join(REPO, "bench", "bounded_loop.py")

# A stand-in for "mpirun -np 2 [--bind-to core] EXE RECEIVES STEPS [BUFFERS]": prints the program's
# line, with seconds 1 + 0.01 R + 0.001 B + 0.1 (round - 1) (the rounds drift, the pairing cancels it),
# less 0.02 for 1 receive into 1 buffer (faster than the reference).
FAKE = textwrap.dedent("""
    import os, sys
    a = sys.argv[1:]
    assert a[:2] == ["-np", "2"], a
    a = a[2:]
    if a[:2] == ["--bind-to", "core"]:
        a = a[2:]
    receives, steps = int(a[1]), int(a[2])
    buffers = int(a[3]) if len(a) > 3 else max(receives, 1)
    log = os.environ["FAKE_LOG"]
    with open(log, "a") as f:
        f.write(" ".join(a[1:]) + "\\n")
    calls = sum(1 for _ in open(log))
    rnd = (calls - 1) // int(os.environ["FAKE_VARIANTS"])
    seconds = 1 + 0.01 * receives + 0.001 * buffers + 0.1 * rnd - (0.02 if (receives, buffers) == (1, 1) else 0)
    print(f"{'sync' if receives == 0 else 'not-waiting'} receives {receives} buffers {buffers} steps {steps} "
          f"seconds {seconds:.6f} us_per_step 1 data ok")
""")


def run(tmp_path, *args, variants=5):
    fake = tmp_path / "fake_mpirun.py"
    fake.write_text(FAKE)
    env = dict(os.environ, FAKE_LOG=str(tmp_path / "log"), FAKE_VARIANTS=str(variants))
    return subprocess.run([sys.executable, SCRIPT, "--exe", "EXE", "--mpirun", f"{sys.executable} {fake}", *args],
                          env=env, capture_output=True, text=True, timeout=60)


def test_variants_are_interleaved_and_paired_with_the_same_rounds_sync(tmp_path):
    out = tmp_path / "r.json"
    p = run(tmp_path, "--rounds", "3", "--steps", "7", "--json", str(out))
    assert p.returncode == 0, p.stderr
    launched = (tmp_path / "log").read_text().split("\n")[:-1]
    # Round by round: the reference, then 1, 10, 1/10 and 0/10 (BUFFERS only where given).
    assert launched == ["0 7", "1 7", "10 7", "1 7 10", "0 7 10"] * 3
    doc = json.loads(out.read_text())
    rows = {(r["receives"], r["buffers"]): r for r in doc["rows"]}
    assert list(rows) == [(0, 1), (1, 1), (10, 10), (1, 10), (0, 10)]
    assert rows[(0, 1)]["seconds"] == [1.001, 1.101, 1.201]
    for (receives, buffers), row in rows.items():
        faster = 0.02 if (receives, buffers) == (1, 1) else 0
        expected = [(1 + 0.01 * receives + 0.001 * buffers + 0.1 * k - faster) / (1.001 + 0.1 * k) for k in range(3)]
        assert abs(row["paired_mean"] - sum(expected) / 3) < 1e-6
        assert abs(row["paired_median"] - expected[1]) < 1e-6
        assert row["rounds_below_1"] == (3 if faster else 0)
    assert "not waiting, 1 posted, 10 buffers" in p.stdout


def test_bad_variants_are_refused_with_one_message(tmp_path):
    for bad in ("3/2", "22", "1/x", "0/0", "1/2/3"):
        p = run(tmp_path, "--variants", bad)
        assert p.returncode == 2, (bad, p.stderr)
        assert p.stderr.count("--variants") == 2 and f"--variants {bad}:" in p.stderr, p.stderr  # usage + message
    p = run(tmp_path, "--rounds", "1")
    assert p.returncode == 2 and "--rounds >= 2" in p.stderr
