#!/usr/bin/env python3
"""Checks that everything registered is complete (standard library only).

  check_registry.py --desync PATH --mpiexec PATH [--np-flag -n] [--preflag X ...] --workdir DIR
                    --cmakelists tests/CMakeLists.txt --sources src

Reads the registry from `desync --registry` (run/command_registry.hpp) and checks:
  - every solver registers simulation cost kinds (core/simulation.hpp), and has a CLI test
    (a desync_cli_test in --cmakelists whose ARGS start with its name);
  - every method of the Krylov family (the solvers "krylov" and "cg", one command under two names;
    solvers/cg/cg.hpp) registers its own cost kinds, among its solver's, and has a CLI test that runs
    it by name under either name (ARGS krylov|cg ... --method NAME);
  - every kind of work charged by name in --sources (core::charge("KIND", ...)) is registered, so
    that a simulated run's cost model is checked for it before any work.
Exits 0 if every check passes.
"""
import json
import pathlib
import re
import sys

from desync_test_util import arguments, check, conclude, run_desync

# The solvers whose methods are the Krylov family's (one command, two names): each method runs its own
# code and registers its own cost kind.
CG_FAMILY = ("krylov", "cg")


def cli_tests(cmakelists):
    """The ARGS of every desync_cli_test(...) call in a CMakeLists.txt, as lists of words."""
    text = re.sub(r"#[^\n]*", "", pathlib.Path(cmakelists).read_text(encoding="utf-8"))
    tests = []
    for m in re.finditer(r"\bdesync_cli_test\s*\(", text):
        depth, i, quoted = 1, m.end(), False
        while depth and i < len(text):  # to the matching parenthesis, outside quoted arguments
            c = text[i]
            if c == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and c in "()":
                depth += 1 if c == "(" else -1
            i += 1
        words = re.findall(r'"(?:[^"\\]|\\.)*"|[^\s"]+', text[m.end():i - 1])
        if "ARGS" in words:
            tests.append([w.strip('"') for w in words[words.index("ARGS") + 1:]])
    return tests


def charged_kinds(sources):
    """The kinds named by a literal in a core::charge / charge_deferred call, with where."""
    kinds = {}
    for path in sorted(pathlib.Path(sources).rglob("*.[ch]pp")):
        for m in re.finditer(r'\bcharge(?:_deferred)?\(\s*"([^"]+)"', path.read_text(encoding="utf-8")):
            kinds.setdefault(m.group(1), str(path))
    # A conditional choice between two literals: charge(c ? "a" : "b", ...).
    for path in sorted(pathlib.Path(sources).rglob("*.[ch]pp")):
        for m in re.finditer(r'\bcharge(?:_deferred)?\([^;]*?\?\s*"([^"]+)"\s*:\s*"([^"]+)"', path.read_text(encoding="utf-8")):
            kinds.setdefault(m.group(1), str(path))
            kinds.setdefault(m.group(2), str(path))
    return kinds


def main():
    ap = arguments(__doc__)
    ap.add_argument("--cmakelists", required=True, help="the CMakeLists.txt declaring the CLI tests")
    ap.add_argument("--sources", required=True, help="the source tree whose charge() calls are checked")
    args = ap.parse_args()

    proc = run_desync(args, 1, ("--registry",))
    try:
        registry = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        check(False, f"desync --registry printed no JSON ({e}): {proc.stdout[:200]!r}")
        return conclude("")
    solvers = registry.get("solvers", [])
    check(len(solvers) > 0, "the registry has no solver")
    tests = cli_tests(args.cmakelists)
    check(len(tests) > 0, f"no desync_cli_test in {args.cmakelists}")

    registered = {k["name"] for k in registry.get("shared_cost_kinds", [])}
    cg_methods = 0
    for s in solvers:
        name = s["name"]
        registered.update(s.get("cost_kinds", []))
        check(len(s.get("cost_kinds", [])) > 0, f"solver {name}: registers no simulation cost kinds")
        runs = [t for t in tests if t and t[0] == name]
        check(len(runs) > 0, f"solver {name}: no CLI test (desync_cli_test with ARGS {name} ...) in {args.cmakelists}")
        if name not in CG_FAMILY:
            continue
        family_runs = [t for t in tests if t and t[0] in CG_FAMILY]
        for m in s.get("methods", []):
            cg_methods += 1
            own = m.get("cost_kinds", [])
            check(len(own) > 0, f"CG method {m['name']}: registers no simulation cost kinds")
            for k in own:
                check(k in s.get("cost_kinds", []), f"CG method {m['name']}: cost kind {k} is not among cg's")
            option = s["method_option"]
            check(any(option in t and t.index(option) + 1 < len(t) and t[t.index(option) + 1] == m["name"]
                      for t in family_runs),
                  f"CG method {m['name']}: no CLI test (desync_cli_test with ARGS {name} ... {option} {m['name']}) "
                  f"in {args.cmakelists}")
    check(cg_methods > 0, f"the registry has no solver {' or '.join(CG_FAMILY)} with methods")

    for kind, where in charged_kinds(args.sources).items():
        check(kind in registered, f"{where} charges {kind!r}, which no solver and no shared list registers")

    return conclude(f"registry: {len(solvers)} solvers and {cg_methods} CG methods complete, "
                    f"{len(registered)} cost kinds registered")


if __name__ == "__main__":
    sys.exit(main())
