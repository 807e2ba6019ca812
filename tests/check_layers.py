#!/usr/bin/env python3
"""The layers of desync point one way: a source may include headers of its own layer and of the
layers below it, never of a layer above. Checks every #include "desync/<layer>/..." in
include/desync/<layer>/ and src/<layer>/ (and the executable's apps/, which sits on top).

    python3 tests/check_layers.py [ROOT]      exit 0 when clean, 1 with one line per violation
"""
import pathlib
import re
import sys

# Bottom up. A layer may use itself and everything before it in this list.
LAYERS = ["core", "decomposition", "communication", "linalg", "problems", "solvers", "run"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]desync/([a-z_]+)/', re.M)


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
            for m in INCLUDE.finditer(path.read_text(encoding="utf-8")):
                target = m.group(1)
                if target not in order:
                    unknown.append(f"{path.relative_to(root)}: includes unknown layer '{target}'")
                elif order[target] > order[layer]:
                    line = path.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
                    found.append(f"{path.relative_to(root)}:{line}: layer '{layer}' includes "
                                 f"'desync/{target}/' from the layer above")
    return found + unknown


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    bad = violations(root)
    for line in bad:
        print(line)
    print(f"layers: {len(bad)} violation(s) in {root}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
