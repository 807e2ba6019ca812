"""The networks a simulated cluster can have (crossbar, two-level fat tree, torus): the SimGrid
topo_parameters a node count gets by default, checking the ones a user gives, and how many links a
message crosses between two nodes (which splits a mean latency over the links)."""
import math

from ..errors import UserError

TOPOLOGIES = ("crossbar", "fat-tree", "torus")


def fat_tree_parameters(nodes):
    """SimGrid FAT_TREE topo_parameters for `nodes` nodes: two levels, d1 nodes per leaf switch (the
    smallest divisor of N with d1 * d1 >= N), d2 = N / d1 leaf switches, d1 spine switches each joined
    to every leaf by one link (full bisection). One switch ("1;N;1;1") when N has no such split."""
    if nodes == 1:
        return "1;1;1;1"
    d1 = min(d for d in range(1, nodes + 1) if nodes % d == 0 and d * d >= nodes)
    d2 = nodes // d1
    if d2 == 1:
        return f"1;{nodes};1;1"
    return f"2;{d1},{d2};1,{d1};1,1"


def _int_list(text, what):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"{what}: '{text}' is not a comma-separated list of whole numbers") from None
    if any(v < 1 for v in values):
        raise UserError(f"{what}: '{text}' has a number below 1")
    return values


def parse_fat_tree(text, nodes):
    """The down counts of a FAT_TREE topo_parameters 'levels;down,...;up,...;links,...' for N nodes."""
    what = f"--topo-parameters '{text}'"
    parts = str(text).split(";")
    if len(parts) != 4:
        raise UserError(f"{what}: a fat tree is 'LEVELS;DOWN,...;UP,...;LINKS,...' (e.g. 2;8,8;1,8;1,1)")
    try:
        levels = int(parts[0])
    except ValueError:
        raise UserError(f"{what}: the number of levels '{parts[0]}' is not a whole number") from None
    if levels < 1:
        raise UserError(f"{what}: the number of levels must be at least 1")
    lists = [_int_list(p, what) for p in parts[1:]]
    if any(len(values) != levels for values in lists):
        raise UserError(f"{what}: each of the three lists needs {levels} numbers (one per level)")
    if math.prod(lists[0]) != nodes:
        raise UserError(f"{what}: the down counts multiply to {math.prod(lists[0])} nodes, not {nodes}")
    return lists[0]


def torus_dimensions(nodes):
    """Near-cubic torus dimensions for N nodes: a <= b <= c with a*b*c = N and c - a smallest, written
    longest first, dimensions of 1 left out (SimGrid 3.32 fails on them)."""
    best = None
    a = 1
    while a * a * a <= nodes:
        if nodes % a == 0:
            m = nodes // a
            b = a
            while b * b <= m:
                if m % b == 0:
                    c = m // b
                    key = (c - a, c)
                    if best is None or key < best[0]:
                        best = (key, (c, b, a))
                b += 1
        a += 1
    dims = [d for d in best[1] if d > 1]
    return dims or [1]


def parse_torus(text, nodes):
    what = f"--topo-parameters '{text}'"
    dims = _int_list(str(text), what)
    if math.prod(dims) != nodes:
        raise UserError(f"{what}: the torus dimensions multiply to {math.prod(dims)} nodes, not {nodes}")
    if len(dims) > 1 and 1 in dims:
        raise UserError(f"{what}: leave out dimensions of size 1 (SimGrid 3.32 fails on them)")
    return dims


def _ring_mean(d):
    return sum(min(k, d - k) for k in range(d)) / d


def links_between_nodes(topology, nodes, shape):
    """(mean, fewest, most) links a message crosses between two distinct nodes. crossbar: the two
    private links (the backbone has no latency); fat tree: 2 per level up to the lowest common switch;
    torus: one per hop, shortest way round each ring, dimension by dimension."""
    if topology == "crossbar" or nodes == 1:
        n = 1 if topology == "torus" else 2
        return float(n), n, n
    if topology == "fat-tree":
        below = [1]
        for d in shape:
            below.append(below[-1] * d)
        total = sum(2 * level * (below[level] - below[level - 1]) for level in range(1, len(below)))
        levels = [level for level in range(1, len(below)) if below[level] > below[level - 1]]
        return total / (nodes - 1), 2 * levels[0], 2 * levels[-1]
    mean_all = sum(_ring_mean(d) for d in shape)  # over ordered pairs, a node with itself included
    return nodes * mean_all / (nodes - 1), 1, sum(d // 2 for d in shape)
