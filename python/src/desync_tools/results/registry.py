"""The registry of generated tables, inline values and figures, filled by the page modules."""
import os
import re

from ..errors import UserError

TABLES = {}
VALUES = {}
FIGURES = {}


def _register(kind, store, name):
    def wrap(function):
        if name in store:
            raise UserError(f"results: {kind} '{name}' registered twice")
        store[name] = function
        return function
    return wrap


def table(name):
    """@table("page.name"): function(data) -> the Markdown lines of a block (a table, usually)."""
    return _register("table", TABLES, name)


def value(name):
    """@value("page.name"): function(data) -> the text of one inline number."""
    return _register("value", VALUES, name)


def figure(name):
    """@figure("page.name"): function(data) -> a matplotlib Figure (drawn by `desync-plot results`)."""
    return _register("figure", FIGURES, name)


def load_pages():
    """Imports every page module, which registers its tables, values and figures."""
    from . import pages  # noqa: F401
    return TABLES, VALUES, FIGURES


# ---------------------------------------------------------------------------------------------- claims
# Every verdict a page gives, registered by its page module: the index lists and counts them all, and
# test_results checks that each page's verdict rows are exactly its registered claims.

VERDICT_WORDS = ("reproduced", "partly", "not reproduced", "not attempted", "not distinguishable")
CLAIMS = []


def claims(page, paper, rows, own=(), shown_in=None):
    """Registers a page's claims in the order of its verdict rows. rows: (the paper's claim and where it
    is, verdict) pairs; own: the same for findings that are desync's own (a condition of desync's runs,
    not a claim of the paper), which the index lists apart. A verdict is the name of the value that
    shows it on the page ("**word**: reason", or "**word**" with the reason beside it), or
    (that name, function(data) -> the reason the index shows after the bare word). shown_in: the
    generated table whose rows show the verdicts, where the page has no value markers for them."""
    for is_own, group in ((False, rows), (True, own)):
        for text, verdict in group:
            name, detail = verdict if isinstance(verdict, tuple) else (verdict, None)
            CLAIMS.append({"page": page, "paper": paper, "claim": text, "verdict": name, "detail": detail,
                           "own": is_own, "shown_in": shown_in})


def not_attempted(name, reason):
    """Registers the value `name`, a verdict "**not attempted**: reason", and returns its name."""
    value(name)(lambda data: f"**not attempted**: {reason}")
    return name


def verdict_word(text):
    """The verdict word a verdict's text starts with ("**partly**: ..." -> "partly"); None if none."""
    for word in sorted(VERDICT_WORDS, key=len, reverse=True):
        if text.startswith(f"**{word}**") or text == word:
            return word
    return None


def verdict_rows(text):
    """The table rows of a page's Markdown that give a verdict: a cell, markers taken out, that is a
    verdict word, bold or plain, or starts with one in bold ("**partly**: ..."). A verdict word inside
    a reason ("... — **not reproduced**") does not make a row a verdict row."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|-"):
            continue
        cells = [c.strip() for c in re.sub(r"<!--.*?-->", "", line).strip().strip("|").split("|")]
        if any(verdict_word(c) for c in cells):
            rows.append(line)
    return rows


def uncounted_verdicts(pages):
    """pages: {path: rendered Markdown}. The problems of pages whose verdict rows are not exactly their
    registered claims: a page with more (or fewer) verdict rows than claims, or a claim's verdict value
    that is on no verdict row of its page. The index counts the claims, so a verdict the index does not
    count shows here. Returns a list of one-line messages."""
    problems = []
    for path, text in pages.items():
        page = os.path.basename(path)
        mine = [c for c in CLAIMS if c["page"] == page]
        if page == "index.md" or (not mine and not path.startswith("docs/results/")):
            continue  # the index repeats the claims; pages outside docs/results/ give no verdicts
        rows = verdict_rows(text)
        if len(rows) != len(mine):
            problems.append(f"{path}: {len(rows)} verdict rows, {len(mine)} claims registered for it "
                            f"(registry.claims in its page module)")
        marked = "\n".join(rows)
        for c in mine:
            marker = f"<!-- table: {c['shown_in']} -->" if c["shown_in"] else f"<!-- value: {c['verdict']} -->"
            if marker not in (text if c["shown_in"] else marked):
                problems.append(f"{path}: the verdict {c['verdict']} of the claim '{c['claim'][:60]}' is on no "
                                f"verdict row")
    return problems
