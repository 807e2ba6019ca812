"""Rendering a page: every marked block and inline value replaced by what its function makes from
the data. A page that is already up to date renders to itself, byte for byte."""
import os
import re

from ..errors import UserError
from ..runner.experiment import Experiment, load_experiments
from .registry import TABLES, VALUES, load_pages

BLOCK_OPEN = re.compile(r"^<!-- (table|experiment): ([A-Za-z0-9_.\-]+) -->\s*$")
BLOCK_END = "<!-- end -->"
INLINE = re.compile(r"<!-- value: ([A-Za-z0-9_.\-]+) -->(.*?)<!-- end -->")

# the pages with generated content, relative to the repository root
PAGE_GLOBS = ("docs/results", "docs/benchmarks.md", "README.md")

SETS = {
    "quick": "real runs on this machine, rerun by make reproduce-quick",
    "sim": "simulated runs (desync's SMPI build), rerun by make reproduce",
    "recorded": "kept as recorded: runs on a machine make reproduce does not have (a 16-core node), or needing what "
                "its targets do not build (PETSc, two builds of the tree, MPICH)",
}


def page_paths(root):
    """Every page with generated content, relative to the repository root, in a stable order."""
    out = []
    for g in PAGE_GLOBS:
        p = os.path.join(root, g)
        if os.path.isdir(p):
            out += [os.path.join(g, f) for f in sorted(os.listdir(p)) if f.endswith(".md")]
        elif os.path.exists(p):
            out.append(g)
    return out


def load_manifest(root):
    """The experiments of bench/results/*.toml as a dict id -> entry (with its file)."""
    folder = os.path.join(root, "bench", "results")
    experiments = {}
    if not os.path.isdir(folder):
        return experiments
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".toml"):
            continue
        path = os.path.join(folder, name)
        # The experiment files' one format (desync_tools.runner.experiment): the results pages run
        # command experiments, each writing its data file.
        for e in load_experiments(path):
            if isinstance(e, Experiment):
                raise UserError(f"{path}: experiment {e.id} is a sweep of desync runs (solver = {e.solver}): the "
                                "results pages run commands (run a sweep with desync-run, its command here)")
            for key in ("set", "output", "description"):
                if key not in e:
                    raise UserError(f"{path}: experiment {e['id']} without '{key}'")
            if e["set"] not in SETS:
                raise UserError(f"{path}: experiment {e['id']}: set '{e['set']}' (expected {', '.join(SETS)})")
            if e["id"] in experiments:
                raise UserError(f"{path}: experiment {e['id']} listed twice")
            e["file"] = os.path.relpath(path, root)
            experiments[e["id"]] = e
    return experiments


def _data_link(page_rel, output):
    """The link from a page (relative to the root) to docs/data/<output>."""
    here = os.path.dirname(page_rel) or "."
    return os.path.relpath(os.path.join("docs", "data", output), here)


# what the placeholders of a command read as on a page: make reproduce's executables, the data in docs/data
SHOWN = {"python": "build/venv/bin/python", "desync": "build/bench/desync", "sim_desync": "build/smpi/desync", "build": "build/bench"}


def shown_command(entry):
    """The experiment's command as a reader would type it from the repository root."""
    out = os.path.join("docs", "data", entry["output"])
    return entry["command"].strip().format(out=out, outdir=os.path.dirname(out), **SHOWN)


def experiment_block(entry, page_rel, data):
    """The lines under <!-- experiment: ID -->: what ran, its command and its data, and for runs on
    this host what they recorded of its load."""
    command = shown_command(entry) if entry["set"] != "recorded" else entry["command"].strip()
    where = {"quick": "`make reproduce-quick` reruns it", "sim": "`make reproduce` reruns it",
             "recorded": "not rerun by `make reproduce`: " + entry.get("machine", "another machine")}[entry["set"]]
    link = _data_link(page_rel, entry["output"])
    return "\n".join([
        f"*{entry['description']}* ({where}; about {entry.get('minutes', 1)} min)",
        "",
        "```sh",
        command,
        "```",
        f"Data: [`docs/data/{entry['output']}`]({link})" + (
            f"; {data.host_load(entry['output'], entry['id'])}" if entry["set"] == "quick" else ""),
    ])


def render_text(text, data, page_rel, manifest):
    """The page with every marked block and value rendered from `data`; UserError on an unknown name
    or an unclosed block."""
    load_pages()
    data.manifest = manifest
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = BLOCK_OPEN.match(line)
        if not m:
            out.append(INLINE.sub(lambda v: _value(v, data, page_rel, i), line))
            i += 1
            continue
        kind, name = m.groups()
        j = i + 1
        while j < len(lines) and lines[j].strip() != BLOCK_END:
            if BLOCK_OPEN.match(lines[j]):
                break
            j += 1
        if j >= len(lines) or lines[j].strip() != BLOCK_END:
            raise UserError(f"{page_rel}:{i + 1}: <!-- {kind}: {name} --> without its <!-- end -->")
        if kind == "table":
            if name not in TABLES:
                raise UserError(f"{page_rel}:{i + 1}: unknown table '{name}'")
            body = TABLES[name](data)
        else:
            if name not in manifest:
                raise UserError(f"{page_rel}:{i + 1}: unknown experiment '{name}' (bench/results/*.toml)")
            body = experiment_block(manifest[name], page_rel, data)
        out.append(line)
        out += body.rstrip("\n").split("\n")
        out.append(BLOCK_END)
        i = j + 1
    return "\n".join(out)


def _value(match, data, page_rel, index):
    name = match.group(1)
    if name not in VALUES:
        raise UserError(f"{page_rel}:{index + 1}: unknown value '{name}'")
    return f"<!-- value: {name} -->{VALUES[name](data)}<!-- end -->"


def names_used(text):
    """The tables, values and experiments a page marks."""
    tables, values, experiments = set(), set(), set()
    for line in text.split("\n"):
        m = BLOCK_OPEN.match(line)
        if m:
            (tables if m.group(1) == "table" else experiments).add(m.group(2))
        values.update(INLINE.findall(line) and [v[0] for v in INLINE.findall(line)])
    return tables, values, experiments
