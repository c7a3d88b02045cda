#!/usr/bin/env python3
"""Checks the layering of ringtrain's sources and that no components include each other in a loop.

Every `#include "ringtrain/<area>/..."` in include/ringtrain/** and src/**, and every relative
`#include "..."` inside src/<area>/, is checked against LAYERS below: an area may include its own
area and the areas of lower levels, never a higher level nor another area of its own level.

A component is a header and its source (include/ringtrain/run/trainer.hpp and
src/run/trainer.cpp are the component run/trainer; a private header foo_impl.hpp belongs to
the component foo). Components must not include each other
in a loop (trainer.cpp includes diagnose.hpp while diagnose.cpp includes trainer.hpp): such a
pair can be neither understood nor tested alone. A loop of headers is one case of this.

Prints one line per violation and per cycle and exits 1 when there is any, 0 otherwise.
`--self-test` checks the checker on a small tree made in a temporary folder.
"""
import argparse
import os
import re
import sys
import tempfile
from collections import deque

# The layer order, lowest first. Areas on one line are one level: they must not include each
# other. This table is the only place the order is written down.
LAYERS = [
    ["core"],
    ["backend"],
    ["prof", "distributed"],
    ["nn"],
    ["optim", "data"],
    ["loader"],
    ["import"],
    ["parallel"],
    ["run_config"],
    ["checkpoint", "report"],
    ["exchange", "evaluation"],
    ["run"],
    ["apps"],
]

SOURCE_SUFFIXES = (".hpp", ".h", ".cuh", ".cpp", ".cc", ".cu", ".hpp.in")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LEVEL = {area: level for level, areas in enumerate(LAYERS) for area in areas}


def rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def area_and_component(relpath):
    """('run', 'run/trainer') for include/ringtrain/run/trainer.hpp or src/run/trainer.cpp;
    None for a file outside an area (src/CMakeLists.txt)."""
    parts = relpath.split("/")
    if parts[:2] == ["include", "ringtrain"] and len(parts) > 3:
        inner = parts[2:]
    elif parts[0] == "src" and len(parts) > 2:
        inner = parts[1:]
    else:
        return None
    name = inner[-1]
    for suffix in SOURCE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith("_impl"):
        name = name[: -len("_impl")]
    return inner[0], "/".join(inner[:-1] + [name])


def source_files(root):
    for top in ("include/ringtrain", "src"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(dirpath, name)


def resolve(include, including_file, root):
    """The repository path an include names, or None for one outside the tree (a generated
    header, a system header written with quotes)."""
    if include.startswith("ringtrain/"):
        candidates = [os.path.join(root, "include", include)]
    else:
        candidates = [os.path.join(os.path.dirname(including_file), include)]
    candidates += [c + ".in" for c in candidates]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return rel(os.path.normpath(candidate), root)
    if include.startswith("ringtrain/"):
        return "include/" + include  # generated (version.hpp): its area is still known
    return None


def layer_rule(src_area, dst_area):
    """Why src_area may not include dst_area, or None when it may."""
    if src_area == dst_area:
        return None
    for area in (src_area, dst_area):
        if area not in LEVEL:
            return f"area '{area}' is not in the layer table of tools/check_layers.py"
    if LEVEL[dst_area] > LEVEL[src_area]:
        return f"lower layer '{src_area}' must not include higher layer '{dst_area}'"
    if LEVEL[dst_area] == LEVEL[src_area]:
        return f"'{src_area}' and '{dst_area}' are one level: they must not include each other"
    return None


def scan(root):
    """(violations, edges): edges maps component -> {component: 'file:line' of one include}."""
    violations, edges = [], {}
    for path in source_files(root):
        relpath = rel(path, root)
        src = area_and_component(relpath)
        if src is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                match = INCLUDE_RE.match(line)
                target = match and resolve(match.group(1), path, root)
                dst = target and area_and_component(target)
                if not dst:
                    continue
                where = f"{relpath}:{lineno}"
                why = layer_rule(src[0], dst[0])
                if why:
                    violations.append(f'{where}: #include "{match.group(1)}": {why}')
                if dst[1] != src[1]:
                    edges.setdefault(src[1], {}).setdefault(dst[1], where)
    return violations, edges


def strongly_connected(edges):
    """Tarjan's components of the include graph, iteratively (no recursion limit)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    nodes = sorted(set(edges) | {d for targets in edges.values() for d in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    scc = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        scc.append(member)
                        if member == node:
                            break
                    result.append(sorted(scc))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, {})))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return [scc for scc in result if len(scc) > 1]


def shortest_cycle(start, members, edges):
    """The shortest path start -> ... -> start inside one strongly connected component."""
    parent, queue = {start: None}, deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, {})):
            if child == start:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1] + [start]
            if child in members and child not in parent:
                parent[child] = node
                queue.append(child)
    return []


def cycles(edges):
    """One line per cycle: every component of a loop is on at least one printed cycle."""
    lines = []
    for scc in strongly_connected(edges):
        members, covered = set(scc), set()
        for start in scc:
            if start in covered:
                continue
            path = shortest_cycle(start, members, edges)
            covered.update(path)
            steps = [f"{a} ({edges[a][b]})" for a, b in zip(path, path[1:])]
            lines.append("include cycle: " + " -> ".join(steps + [path[-1]]))
    return lines


def check(root):
    violations, edges = scan(root)
    return violations + cycles(edges)


def self_test():
    files = {
        "include/ringtrain/core/a.hpp": '#include "ringtrain/core/b.hpp"\n',
        "include/ringtrain/core/b.hpp": "",
        "src/core/a.cpp": '#include "ringtrain/core/a.hpp"\n#include "ringtrain/run/t.hpp"\n',
        "include/ringtrain/optim/o.hpp": '#include "ringtrain/data/d.hpp"\n',
        "include/ringtrain/data/d.hpp": '#include "ringtrain/nn/n.hpp"\n',
        "include/ringtrain/nn/n.hpp": "",
        "include/ringtrain/run/t.hpp": "",
        "include/ringtrain/run/p.hpp": "",
        "src/run/p.cpp": '#include "ringtrain/run/p.hpp"\n#include "ringtrain/run/q.hpp"\n',
        "include/ringtrain/run/q.hpp": "",
        "src/run/q.cpp": '#include "ringtrain/run/q.hpp"\n\n#include "ringtrain/run/p.hpp"\n',
        "src/backend/k.cpp": '#include "kernels.hpp"\n#include "k_impl.hpp"\n',
        "src/backend/k_impl.hpp": '#include "ringtrain/backend/k.hpp"\n',
        "include/ringtrain/backend/k.hpp": "",
        "src/backend/kernels.hpp": '#include "../nn/n_impl.hpp"\n',
        "src/nn/n_impl.hpp": "",
    }
    expected = [
        'src/backend/kernels.hpp:1: #include "../nn/n_impl.hpp": lower layer \'backend\' must '
        "not include higher layer 'nn'",
        'src/core/a.cpp:2: #include "ringtrain/run/t.hpp": lower layer \'core\' must not '
        "include higher layer 'run'",
        "include/ringtrain/optim/o.hpp:1: #include \"ringtrain/data/d.hpp\": 'optim' and 'data' "
        "are one level: they must not include each other",
        "include cycle: run/p (src/run/p.cpp:2) -> run/q (src/run/q.cpp:3) -> run/p",
    ]
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        found = check(root)
        os.remove(os.path.join(root, "src/core/a.cpp"))
        os.remove(os.path.join(root, "src/backend/kernels.hpp"))
        os.remove(os.path.join(root, "include/ringtrain/optim/o.hpp"))
        os.remove(os.path.join(root, "src/run/q.cpp"))
        clean = check(root)
    ok = sorted(found) == sorted(expected) and clean == []
    for line in sorted(set(found) ^ set(expected)):
        print(("unexpected: " if line in found else "missed: ") + line)
    for line in clean:
        print("unexpected on the clean tree: " + line)
    print("check_layers self-test " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the repository root (default: the one holding this script)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on a temporary tree with known violations")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "include", "ringtrain")):
        print(f"check_layers: error: {root} has no include/ringtrain (pass --root REPO)")
        return 2
    problems = check(root)
    for line in problems:
        print(line)
    levels = " <- ".join(", ".join(areas) for areas in LAYERS)
    print(f"check_layers: {len(problems)} problem(s); layers: {levels}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
