"""Where a table's records come from: a data folder (docs/data, or a rerun's folder), falling back to
the committed one for the experiments a rerun did not make."""
import csv
import json
import os

from ..errors import UserError


class Data:
    def __init__(self, roots):
        self.roots = [os.path.abspath(r) for r in roots]
        self.used = {}  # relative path -> the root it came from
        self.manifest = {}  # the experiments of bench/results/*.toml, set by the renderer

    def path(self, rel):
        """The file or folder `rel` under the first root that has it; UserError when none has."""
        for root in self.roots:
            p = os.path.join(root, rel)
            if os.path.exists(p):
                self.used[rel] = root
                return p
        raise UserError(f"results: no data file {rel} under {', '.join(self.roots)}")

    def exists(self, rel):
        return any(os.path.exists(os.path.join(r, rel)) for r in self.roots)

    def glob(self, pattern):
        """Relative paths matching a glob pattern under any root, each once, sorted."""
        import glob as _glob
        found = set()
        for root in self.roots:
            found.update(os.path.relpath(p, root) for p in _glob.glob(os.path.join(root, pattern)))
        return sorted(found)

    def json(self, rel):
        p = self.path(rel)
        try:
            with open(p, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise UserError(f"results: {p}: not a JSON file ({e})") from None

    def csv(self, rel):
        """Rows of a CSV table (a desync-run results.csv) as dicts of strings."""
        p = self.path(rel)
        with open(p, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def host_load(self, rel, experiment=None):
        """What the runs behind `rel` recorded of their host's load (runner.machine.HostLoad): "2 of 30
        runs disturbed" where the runs carry a `disturbed` mark (a script's "host_runs", or its runs'
        own), else the record desync-results run kept for the whole `experiment`
        (host-load/<experiment>.json beside the data), else the load averages where only the file
        recorded them, else "not recorded" for data made before desync kept any of these."""
        p = self.path(rel)
        docs = []
        if os.path.isdir(p):
            for dirpath, _, files in os.walk(p):
                in_runs = "runs" in os.path.relpath(dirpath, p).split(os.sep)
                docs += [os.path.join(dirpath, n) for n in files
                         if n == "status.json" or (not in_runs and n.endswith(".json")
                                                   and n not in ("experiment.json", "machine.json"))]
        else:
            docs.append(p)
        marks, loads = [], []
        for path in sorted(set(docs)):
            try:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                continue
            if not isinstance(doc, dict):
                continue
            if "disturbed" in doc:  # a desync-run status.json
                marks.append(doc["disturbed"])
            runs = doc.get("host_runs", doc.get("runs"))
            if isinstance(runs, list):
                marks += [r["disturbed"] for r in runs if isinstance(r, dict) and "disturbed" in r]
            if "loadavg_before" in doc and "loadavg_after" in doc:
                loads.append((doc["loadavg_before"][0], doc["loadavg_after"][0]))
        if marks:
            return f"host load: {sum(map(bool, marks))} of {len(marks)} runs disturbed"
        whole = f"host-load/{experiment}.json"
        if experiment and self.exists(whole):
            w = self.json(whole)
            return (f"host load: {'disturbed' if w['disturbed'] else 'quiet'}, other processes took "
                    f"{w['foreign_cpu_seconds']:g} CPU s in the experiment's {w['seconds']:g} s")
        if loads:
            return (f"host load average {max(b for b, _ in loads):.2f} before, {max(a for _, a in loads):.2f} after "
                    f"(no per-run record)")
        return "host load not recorded (made before desync recorded it)"

    def text(self, rel):
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    def records(self, rel):
        """The run records (record.json) in a desync-run results folder, sorted by run name."""
        folder = os.path.join(self.path(rel), "runs")
        out = []
        for name in sorted(os.listdir(folder)):
            p = os.path.join(folder, name, "record.json")
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    out.append((name, json.load(f)))
        return out
