"""desync-plot report: one page (self-contained HTML, or Markdown with images beside it) with the
results table of an experiment folder and every figure that applies to it."""
import base64
import html
import io
import json
import os

import matplotlib.pyplot as plt

from ..errors import UserError
from ..records import check_record, load_record
from ..tables import cell, groups, is_numeric_column, ok_rows, read_table, record_row, sort_key
from .figures import plot_breakdown, plot_convergence, plot_delays, run_labels
from .tablefigs import plot_scaling, plot_sweep

MAX_CURVES = 8
MAX_BARS = 12
MAX_DELAY_FIGURES = 4
TABLE_COLUMNS = ("status", "exit_code", "converged", "stop_reason", "wall_time", "iterations_mean",
                 "iterations_max", "true_residual")


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def _records(results_dir):
    """{run_id: record} for the runs of a results folder (runs/<id>/record.json), or, for any other
    folder, every JSON file under it that is a desync run record (keyed by relative path)."""
    runs = os.path.join(results_dir, "runs")
    found = {}
    if os.path.isdir(runs):
        for rid in sorted(os.listdir(runs)):
            path = os.path.join(runs, rid, "record.json")
            if os.path.isfile(path):
                try:
                    found[rid] = load_record(path)
                except UserError:
                    pass  # the table shows the run as failed
        return found
    for root, _, files in os.walk(results_dir):
        for name in sorted(files):
            if name.endswith(".json"):
                doc = _json(os.path.join(root, name))
                try:
                    found[os.path.relpath(os.path.join(root, name), results_dir)] = check_record(doc, name)
                except UserError:
                    pass
    return found


def _table(results_dir, records):
    """(columns, rows) of results.csv, or rows built from the records when it does not exist."""
    path = os.path.join(results_dir, "results.csv")
    if os.path.isfile(path):
        return read_table(path)
    rows = []
    for rid, rec in records.items():
        row = {"run_id": rid, "status": "ok"}
        row.update({k: cell(v) for k, v in record_row(rec).items()})
        rows.append(row)
    columns = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    return columns, rows


def _chunks(items, n):
    return [items[i:i + n] for i in range(0, len(items), n)]


class _Page:
    """Collects sections and figures, then writes HTML (images inline) or Markdown (images beside)."""

    def __init__(self, output):
        self.output = output
        self.markdown = output.endswith(".md")
        self.parts = []
        self.figures = 0
        if self.markdown:
            self.image_dir = os.path.splitext(output)[0] + "_figures"
            os.makedirs(self.image_dir, exist_ok=True)

    def heading(self, text, level=2):
        self.parts.append(("#" * level + " " + text) if self.markdown else f"<h{level}>{html.escape(text)}</h{level}>")

    def text(self, text):
        self.parts.append(text if self.markdown else f"<p>{html.escape(text)}</p>")

    def table(self, columns, rows):
        if self.markdown:
            lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
            self.parts.append("\n".join(lines))
        else:
            head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns) + "</tr>"
                           for r in rows)
            self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def figure(self, fig, caption):
        self.figures += 1
        if self.markdown:
            name = f"figure{self.figures:02d}.png"
            fig.savefig(os.path.join(self.image_dir, name), dpi=90)
            rel = os.path.join(os.path.basename(self.image_dir), name)
            self.parts.append(f"![{caption}]({rel})\n\n*{caption}*")
        else:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            data = base64.b64encode(buf.getvalue()).decode("ascii")
            self.parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
                              f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        plt.close(fig)

    def write(self, title):
        if self.markdown:
            doc = f"# {title}\n\n" + "\n\n".join(self.parts) + "\n"
        else:
            style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
                     "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}")
            doc = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                   f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>\n" + "\n".join(self.parts)
                   + "\n</body></html>\n")
        with open(self.output, "w", encoding="utf-8") as f:
            f.write(doc)


def write_report(results_dir, output):
    """Writes the report of `results_dir` to `output` (.html or .md); returns the number of figures."""
    results_dir = os.fspath(results_dir)
    if not os.path.isdir(results_dir):
        raise UserError(f"{results_dir}: no such folder")
    if not (output.endswith(".html") or output.endswith(".md")):
        raise UserError(f"{output}: the report is .html or .md")
    experiment = _json(os.path.join(results_dir, "experiment.json")) or {}
    machine = _json(os.path.join(results_dir, "machine.json")) or {}
    records = _records(results_dir)
    columns, rows = _table(results_dir, records)
    if not rows:
        raise UserError(f"{results_dir}: no runs found (neither results.csv nor desync run records)")
    swept = [p for p in experiment.get("parameters", []) if p in columns]
    page = _Page(output)
    if experiment.get("description"):
        page.text(experiment["description"])
    if machine:
        page.text("Machine: " + ", ".join(f"{k} {machine[k]}" for k in ("hostname", "cpu", "mpi", "desync_revision")
                                          if machine.get(k)))
    page.heading("Runs")
    shown = [c for c in ["run_id"] + swept + ["repetition"] + list(TABLE_COLUMNS) if c in columns]
    page.table(shown, sorted(rows, key=lambda r: [sort_key(r.get(c, "")) for c in swept + ["repetition"]]))
    failed = [r for r in rows if r.get("status", "ok") not in ("ok", "")]
    if failed:
        page.text(f"{len(failed)} of {len(rows)} runs failed: "
                  + ", ".join(f"{r.get('run_id')} ({r.get('status')}, exit {r.get('exit_code', '?')})" for r in failed))
    good = ok_rows(rows)
    # One record per parameter combination (the first repetition) for the record figures.
    firsts = {}
    for r in sorted(good, key=lambda r: sort_key(r.get("repetition", "1"))):
        key = tuple(r.get(p, "") for p in swept)
        if key not in firsts and r.get("run_id") in records:
            firsts[key] = records[r["run_id"]]
    if not swept:
        firsts = {(rid,): rec for rid, rec in records.items()}
    recs = [firsts[k] for k in sorted(firsts, key=lambda k: [sort_key(v) for v in k])]
    if recs:
        page.heading("Convergence")
        for chunk in _chunks(recs, MAX_CURVES):
            page.figure(plot_convergence(chunk), "residual against time and iteration (first repetition of each combination)")
        page.heading("Time split")
        for chunk in _chunks(recs, MAX_BARS):
            page.figure(plot_breakdown(chunk, per="run", labels=run_labels(chunk)), "time split per run, means over ranks")
        with_delays = [r for r in recs if sum(sum(pr.get("delay_histogram") or [0]) for pr in r["per_rank"]) > 0
                       and r["method"] != "sync"]
        if with_delays:
            page.heading("Halo delays")
            for rec in with_delays[:MAX_DELAY_FIGURES]:
                page.figure(plot_delays(rec), f"halo delays and iterations per rank: {run_labels([rec])[0]}")
    ranks = {r.get("ranks") for r in good if r.get("ranks")}
    if len(ranks) > 1:
        by = next((p for p in swept if p != "ranks"), None)
        page.heading("Scaling")
        page.figure(plot_scaling(columns, rows, by=by), f"time, iterations and speed-up against ranks{f' by {by}' if by else ''}")
    for p in swept:
        if p == "ranks" or not is_numeric_column(good, p) or len(groups(good, p)) < 2:
            continue
        by = next((q for q in swept if q not in (p, "ranks")), None)
        page.heading(f"Sweep of {p}")
        for metric in ("wall_time", "iterations_mean"):
            if metric in columns:
                page.figure(plot_sweep(columns, rows, p, metric, by=by), f"{metric} against {p}")
    page.write(f"desync experiment: {experiment.get('name', os.path.basename(os.path.abspath(results_dir)))}")
    return page.figures
