#!/usr/bin/env python3
"""The layers of desync point one way: a source may include headers of its own layer and of the
layers below it, never of a layer above. Checks every #include "desync/<layer>/..." in
include/desync/<layer>/ and src/<layer>/ (and the executable's apps/, which sits on top).

Private headers (src/<layer>/**.hpp, apps/*.hpp) stay private: a quoted include that is not
"desync/..." must resolve, relative to the including file, to a header of the same layer's src/
folder (or of apps/ from apps/); public headers include no private one, and apps/ reaches into no
layer's src/.

    python3 tests/check_layers.py [ROOT]      exit 0 when clean, 1 with one line per violation
    python3 tests/check_layers.py --self-test  a tree with one violation of each kind: all are found
"""
import pathlib
import re
import sys

# Bottom up. A layer may use itself and everything before it in this list.
LAYERS = ["core", "decomposition", "communication", "linalg", "problems", "solvers", "run"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]desync/([a-z_]+)/', re.M)
LOCAL = re.compile(r'^\s*#\s*include\s*"((?!desync/)[^"]+)"', re.M)


def private_violations(path: pathlib.Path, root: pathlib.Path, text: str):
    """Quoted non-desync includes: where they lead and whether this file may include that."""
    rel = path.relative_to(root).parts
    found = []
    for m in LOCAL.finditer(text):
        line = text[: m.start()].count("\n") + 1
        where = f"{path.relative_to(root)}:{line}"
        target = (path.parent / m.group(1)).resolve()
        if not target.is_file():
            found.append(f"{where}: '{m.group(1)}' is not a file beside it (private headers are included "
                         f"by their path relative to the including file)")
            continue
        trel = target.relative_to(root.resolve()).parts
        if rel[0] == "include":
            found.append(f"{where}: the public header includes the private '{'/'.join(trel)}'")
        elif trel[0] == "src" and (rel[0] != "src" or rel[1] != trel[1]):
            found.append(f"{where}: includes '{'/'.join(trel)}', private to the '{trel[1]}' layer")
        elif trel[0] == "apps" and rel[0] != "apps":
            found.append(f"{where}: includes '{'/'.join(trel)}', private to apps/")
    return found


def layer_of(path: pathlib.Path, root: pathlib.Path):
    rel = path.relative_to(root).parts
    if rel[0] == "include" and len(rel) > 2 and rel[1] == "desync":
        return rel[2]
    if rel[0] == "src" and len(rel) > 1:
        return rel[1]
    if rel[0] == "apps":
        return "apps"
    return None


def violations(root: pathlib.Path):
    order = {name: i for i, name in enumerate(LAYERS)}
    order["apps"] = len(LAYERS)
    found = []
    unknown = []
    for base in ("include/desync", "src", "apps"):
        for path in sorted((root / base).rglob("*")):
            if path.suffix not in (".hpp", ".cpp", ".h"):
                continue
            layer = layer_of(path, root)
            if layer not in order:
                unknown.append(f"{path.relative_to(root)}: directory '{layer}' is not a known layer")
                continue
            text = path.read_text(encoding="utf-8")
            found += private_violations(path, root, text)
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                if target not in order:
                    unknown.append(f"{path.relative_to(root)}: includes unknown layer '{target}'")
                elif order[target] > order[layer]:
                    line = path.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
                    found.append(f"{path.relative_to(root)}:{line}: layer '{layer}' includes "
                                 f"'desync/{target}/' from the layer above")
    return found + unknown


def self_test():
    """Builds a small tree with one violation of each kind and checks that each is found."""
    import tempfile
    files = {
        "include/desync/core/a.hpp": '#include "desync/solvers/x.hpp"\n',      # upward
        "include/desync/comm/b.hpp": "",                                           # unknown layer
        "include/desync/linalg/c.hpp": '#include "../../../src/linalg/p.hpp"\n',  # public -> private
        "src/linalg/p.hpp": "",
        "src/run/q.cpp": '#include "../linalg/p.hpp"\n',                          # another layer's private
        "src/run/ok.cpp": '#include "r.hpp"\n#include "desync/core/a.hpp"\n',   # allowed
        "src/run/r.hpp": "",
        "apps/m.cpp": '#include "../src/run/r.hpp"\n#include "gone.hpp"\n',      # apps -> private, missing
    }
    expect = ["a.hpp:1: layer 'core' includes 'desync/solvers/'", "directory 'comm' is not a known layer",
              "c.hpp:1: the public header includes the private", "q.cpp:1: includes 'src/linalg/p.hpp', private",
              "m.cpp:1: includes 'src/run/r.hpp', private", "m.cpp:2: 'gone.hpp' is not a file"]
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        found = violations(root)
    missed = [e for e in expect if not any(e in f for f in found)]
    for e in missed:
        print(f"self-test: not found: {e}")
    print(f"self-test: {len(found)} violation(s) found, {len(expect)} expected")
    return 1 if missed or len(found) != len(expect) else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    bad = violations(root)
    for line in bad:
        print(line)
    print(f"layers: {len(bad)} violation(s) in {root}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
