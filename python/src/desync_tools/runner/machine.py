"""What ran the experiment: CPU, OS, MPI, desync's revision, load (written to machine.json)."""
import datetime
import os
import platform
import shutil
import subprocess


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
