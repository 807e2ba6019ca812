"""The registry of generated tables, inline values and figures, filled by the page modules."""
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
