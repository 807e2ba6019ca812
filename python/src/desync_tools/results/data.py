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
