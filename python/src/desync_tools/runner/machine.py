"""What ran the experiment: CPU, OS, MPI, desync's revision, load (written to machine.json)."""
import datetime
import os
import platform
import resource
import shutil
import subprocess
import time


def _first_line(cmd, cwd=None):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def os_name():
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def load():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def cpu_busy_seconds():
    """CPU seconds all processes have spent busy since boot (Linux /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """CPU seconds of this process's children that have been waited for (the launcher and its ranks)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# A run during which other processes kept more than this share of every core busy (a load above 0.5 per
# core not from the run) is disturbed: the results pages show it, and the runner says so.
DISTURBED_PER_CORE = 0.5


class HostLoad:
    """What the host did beside one run: made before the run starts; finish() once it is reaped gives
    the load averages before and after, the CPU seconds other processes took meanwhile (the machine's
    busy time less the run's own), and whether that was more than `per_core` of every core."""

    def __init__(self, per_core=DISTURBED_PER_CORE):
        self.per_core = per_core
        self.before = load()
        self.start = time.monotonic()
        self.cpu, self.own = cpu_busy_seconds(), children_cpu_seconds()

    def finish(self):
        seconds = time.monotonic() - self.start
        cpu, own = cpu_busy_seconds(), children_cpu_seconds()
        foreign = None if cpu is None or self.cpu is None else max(0.0, (cpu - self.cpu) - (own - self.own))
        return {"loadavg_before": self.before, "loadavg_after": load(),
                "foreign_cpu_seconds": None if foreign is None else round(foreign, 3),
                "disturbed": foreign is not None and foreign > self.per_core * seconds * (os.cpu_count() or 1)}


def describe(executable, launcher_program):
    """The machine and software of a run, as a dict."""
    exe = shutil.which(executable) or executable
    source = os.path.dirname(os.path.abspath(exe))
    launcher = shutil.which(launcher_program) if launcher_program else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpu": cpu(),
        "cpus": os.cpu_count(),
        "os": os_name(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "mpi": _first_line([launcher, "--version"]) if launcher else None,
        "launcher": launcher_program,
        "desync": os.path.abspath(exe),
        "desync_version": _first_line([exe, "--version"]) if os.access(exe, os.X_OK) else None,
        "desync_revision": (_first_line(["git", "describe", "--always", "--dirty"], cwd=source)
                            if os.path.isdir(source) else None),
        "load_start": load(),
    }
