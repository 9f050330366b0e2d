#!/usr/bin/python3
"""The include graph of lib/, read from the sources.

Every file lib/FOLDER/NAME.{h,cc} is part of the module FOLDER/NAME (a
header and its sources are one module). An include "OTHER/x.h" from a file
of FOLDER is an edge FOLDER -> OTHER between folders, and FOLDER/NAME ->
OTHER/x between modules.

  include_graph.py [--folder F] [--dot] LIB
  include_graph.py --check [--layers DESIGN.md] [--modules F ...] [--rooms F ...] LIB

The first form prints the module graph of folder F (default: the folders'
graph), as text lines "a -> b, c" or as Graphviz (--dot). --check exits 1
if the folders include each other in a cycle; with --layers, if a folder
includes one the "| layer | includes |" table of that Markdown file does
not allow; with --modules, if modules of folder F include each other in a
cycle (an include that runs back up: a.cc includes b.h, whose headers
include a.h); with --rooms F, if a subfolder (a room) of folder F includes
another room that the "| room of `F` | includes |" table of the --layers
file does not allow, or rooms include each other in a cycle, or a file
outside F includes a header of a room that the table's third column
("public headers", where a row has it) does not name. Each problem names
the files whose includes close it.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_sources(lib):
    """{relative path: [included paths under lib]} for every .h/.cc under lib."""
    files = {}
    for folder, _, names in os.walk(lib):
        for name in names:
            if not name.endswith((".h", ".cc", ".cu", ".cuh")):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, lib)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            files[rel] = [i for i in INCLUDE.findall(text) if os.path.exists(os.path.join(lib, i))]
    return files


def folder_of(rel):
    return rel.split(os.sep)[0] if os.sep in rel else ""


def module_of(rel):
    return os.path.splitext(rel)[0]


def graphs(files):
    """(folder graph, module graph, witness): edges as {node: set}; witness
    maps an edge to one (file, include) that makes it."""
    folders, modules, witness = {}, {}, {}
    for rel, incs in sorted(files.items()):
        f, m = folder_of(rel), module_of(rel)
        folders.setdefault(f, set())
        modules.setdefault(m, set())
        for inc in incs:
            g, n = folder_of(inc), module_of(inc)
            if g != f:
                folders[f].add(g)
                witness.setdefault((f, g), (rel, inc))
            if n != m:
                modules[m].add(n)
                witness.setdefault((m, n), (rel, inc))
    return folders, modules, witness


def find_cycle(graph):
    """One cycle as a list of nodes [a, b, ..., a], or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def room_of(rel, folder):
    """The room (first subfolder) of folder that rel lies in, or None."""
    parts = rel.split(os.sep)
    return parts[1] if len(parts) > 2 and parts[0] == folder else None


def read_table(design, head, what):
    """{name: (allowed names, public headers)} from the table whose header
    row starts with head and 'includes'; a third cell, where there is one,
    lists the row's public headers (`x.h`)."""
    table = {}
    with open(design, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines)
                     if re.match(r"\|\s*" + head + r"\s*\|\s*includes\s*\|", l))
    except StopIteration:
        raise SystemExit(f"include_graph: {design} has no '{what}' table")
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) not in (2, 3):
            raise SystemExit(f"include_graph: {design}: a table row needs two or three cells: "
                             f"{line}")
        allowed = re.sub(r"\([^)]*\)", "", cells[1])  # "(not `algo`)" names what is not allowed
        targets = set(re.findall(r"`([a-z0-9_]+)`", allowed))
        public = set(re.findall(r"`([a-z0-9_]+\.h)`", cells[2])) if len(cells) == 3 else set()
        for name in re.findall(r"`([a-z0-9_]+)`", cells[0]):
            table[name] = (targets, public)
    return table


def read_layers(design):
    """{folder: allowed folders} from the '| layer | includes |' table."""
    return {k: v[0] for k, v in read_table(design, r"layer", "| layer | includes |").items()}


def cycle_text(cycle, witness):
    hops = []
    for a, b in zip(cycle, cycle[1:]):
        src, inc = witness[(a, b)]
        hops.append(f'{src} includes "{inc}"')
    return " -> ".join(cycle) + " (" + "; ".join(hops) + ")"


def table_breaks(graph, allowed, witness, name, table, table_of):
    """Problems of graph against a table: a node the table (table_of) does
    not list, an edge it does not allow; name(node) prints a node."""
    problems = []
    for node in sorted(graph):
        if node not in allowed:
            problems.append(f"{name(node)}: not in the {table_of}")
            continue
        for target in sorted(graph[node] - allowed[node]):
            src, inc = witness[(node, target)]
            problems.append(f"{name(node)} includes {name(target)}, which the {table} does not "
                            f'allow ({src} includes "{inc}")')
    return problems


def check_rooms(files, folder, table):
    """Problems of the rooms of folder: an include the rooms table does not
    allow, a room missing from it, a cycle between rooms, a header of a room
    included from outside folder that is not one of its public headers."""
    allowed = {room: targets for room, (targets, _) in table.items()}
    rooms, witness = {}, {}
    problems = []
    for rel, incs in sorted(files.items()):
        room = room_of(rel, folder)
        for inc in incs:
            other = room_of(inc, folder)
            if room is None and other is not None and folder_of(rel) != folder:
                public = table.get(other, (set(), set()))[1]
                if public and os.path.basename(inc) not in public:
                    problems.append(
                        f'{rel} includes "{inc}", which is not a public header of '
                        f"{folder}/{other} (those are {', '.join(sorted(public))})")
        if room is None:
            continue
        rooms.setdefault(room, set())
        for inc in incs:
            other = room_of(inc, folder)
            if other is not None and other != room:
                rooms[room].add(other)
                witness.setdefault((room, other), (rel, inc))
    if not rooms:
        return [f"{folder}: no rooms"]
    cycle = find_cycle(rooms)
    if cycle:
        problems.append(f"rooms of {folder} include each other: " + cycle_text(cycle, witness))
    return problems + table_breaks(rooms, allowed, witness, lambda room: f"{folder}/{room}",
                                   "rooms table", f"rooms table of {folder}")


def check(folders, modules, witness, layers, strict):
    problems = []
    cycle = find_cycle(folders)
    if cycle:
        problems.append("folders include each other: " + cycle_text(cycle, witness))
    for folder in strict:
        if folder not in folders:
            problems.append(f"{folder}: no sources")
            continue
        inner = {m: {n for n in e if folder_of(n) == folder}
                 for m, e in modules.items() if folder_of(m) == folder}
        cycle = find_cycle(inner)
        if cycle:
            problems.append(f"modules of {folder or '.'} include each other: "
                            + cycle_text(cycle, witness))
    if layers is not None:
        named = {f: e for f, e in folders.items() if f}
        problems += table_breaks(named, layers, witness, lambda f: f, "layer table", "layer table")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--layers")
    ap.add_argument("--modules", action="append", default=[])
    ap.add_argument("--rooms", action="append", default=[])
    ap.add_argument("--folder")
    ap.add_argument("--dot", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.lib):
        print(f"include_graph: {a.lib}: not a folder", file=sys.stderr)
        return 2
    files = read_sources(a.lib)
    folders, modules, witness = graphs(files)
    if a.check:
        layers = read_layers(a.layers) if a.layers else None
        problems = check(folders, modules, witness, layers, a.modules)
        public_too = False
        for folder in a.rooms:
            if not a.layers:
                print("include_graph: --rooms needs --layers (its rooms table)", file=sys.stderr)
                return 2
            rooms = read_table(a.layers, rf"room\s+of\s+`{folder}`",
                               f"| room of `{folder}` | includes |")
            problems += check_rooms(files, folder, rooms)
            public_too |= any(public for _, public in rooms.values())
        for p in problems:
            print("include_graph: " + p, file=sys.stderr)
        if problems:
            return 1
        print(f"include_graph: {len(files)} files, {len(modules)} modules in "
              f"{len(folders)} folders: no cycle"
              + (f" (modules of {', '.join(a.modules)} too)" if a.modules else "")
              + (f", rooms of {', '.join(a.rooms)} as their table says" if a.rooms else "")
              + (" (public headers too)" if public_too else "")
              + (", layers as the table says" if layers else ""))
        return 0
    if a.folder:
        graph = {m: {n for n in e if folder_of(n) == a.folder}
                 for m, e in modules.items() if folder_of(m) == a.folder}
        if not graph:
            print(f"include_graph: no sources in {a.folder}", file=sys.stderr)
            return 2
    else:
        graph = {f: set(e) for f, e in folders.items() if f}
    if a.dot:
        print("digraph includes {")
        for node in sorted(graph):
            print(f'  "{node}";')
            for nxt in sorted(graph[node]):
                print(f'  "{node}" -> "{nxt}";')
        print("}")
    else:
        for node in sorted(graph):
            print(f"{node} -> {', '.join(sorted(graph[node])) or '(nothing)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
