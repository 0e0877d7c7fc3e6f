#!/usr/bin/env python3
"""The layout is by layer, and this keeps it so (ctest entry `layering`).

The rules are in rules.txt beside this file, one per line (that file says
what each kind means): which library folders a library may include, which
are plain C++ (no CAF), which folders' modules must include each other
without a cycle, which folder names must be distinct, and which files or
folders a part of the tree may not include. Fails listing every offending
include (file:line), cycle or clash, and every rule it cannot read
(rules.txt:line).

    python3 tests/layering/check_layers.py [ROOT [RULES]]
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', '..'))
rules_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, 'rules.txt')
include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')

problems = []
libraries = {}  # folder -> folders it may include
plain = set()
acyclic = []
distinct = []
forbidden = []  # (from, to, why)

with open(rules_path, encoding='utf-8') as f:
    for number, raw in enumerate(f, 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(' ')
        where = f'{os.path.basename(rules_path)}:{number}'
        if kind == 'library' and ':' in rest:
            name, _, allowed = rest.partition(':')
            libraries[name.strip()] = set(allowed.split())
        elif kind == 'plain':
            plain.update(rest.split())
        elif kind == 'acyclic' and len(rest.split()) == 1:
            acyclic.append(rest.strip())
        elif kind == 'distinct':
            distinct.append(rest.split())
        elif kind == 'forbid' and ' -> ' in rest and ': ' in rest:
            source, _, target = rest.partition(' -> ')
            target, _, why = target.partition(': ')
            forbidden.append((source.strip(), target.strip(), why.strip()))
        else:
            problems.append(f'{where}: cannot read this rule: {raw.strip()}')


def under(path, spec):
    return path.startswith(spec) if spec.endswith('/') else path == spec


def module(path):
    """core/blas/blas.cpp -> core/blas; core/cavs/models/x.hpp -> core/cavs; core/x.hpp -> core."""
    parts = path.split('/')
    return '/'.join(parts[:2]) if len(parts) > 2 else parts[0]


# Every include of every file of the libraries, as (file, line, target).
includes = []
for library in libraries:
    for dirpath, _, names in os.walk(os.path.join(root, library)):
        for name in sorted(names):
            if not name.endswith(('.hpp', '.cpp', '.h')):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, '/')
            with open(path, encoding='utf-8') as f:
                for number, line in enumerate(f, 1):
                    m = include.match(line)
                    if m:
                        includes.append((rel, number, m.group(1)))

for rel, number, target in includes:
    layer, first = rel.split('/')[0], target.split('/')[0]
    if layer in plain and first == 'caf':
        problems.append(f'{rel}:{number}: plain C++ ({layer}/) includes CAF: {target}')
    elif first in libraries and first not in libraries[layer]:
        problems.append(f'{rel}:{number}: {layer}/ may not include {first}/ (a higher or a sibling layer): {target}')
    for source, banned, why in forbidden:
        if under(rel, source) and under(target, banned):
            problems.append(f'{rel}:{number}: includes {target}, but {source} may not include {banned}: {why}')

# Cycles among the modules of each acyclic folder (Tarjan's strongly connected components).
for top in acyclic:
    edges = {}  # module -> {module: first include that makes the edge}
    for rel, number, target in includes:
        if rel.startswith(top + '/') and target.startswith(top + '/'):
            a, b = module(rel), module(target)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, f'{rel}:{number}')
    index, low, stack, on_stack, counter = {}, {}, [], set(), [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                links = [f'{a} -> {b} ({edges[a][b]})' for a in sorted(component) for b in sorted(component)
                         if b in edges.get(a, {})]
                problems.append(f'modules of {top}/ include each other in a cycle: ' + '; '.join(links))

    for v in sorted(set(edges) | {w for targets in edges.values() for w in targets}):
        if v not in index:
            connect(v)

# Folder names distinct across each group of libraries.
for group in distinct:
    seen = {}
    for library in group:
        for dirpath, dirnames, _ in os.walk(os.path.join(root, library)):
            for d in sorted(dirnames):
                rel = os.path.relpath(os.path.join(dirpath, d), root).replace(os.sep, '/')
                if d in seen and seen[d] != rel:
                    problems.append(f'folder name clash: {seen[d]}/ and {rel}/')
                seen.setdefault(d, rel)
            top = os.path.relpath(dirpath, root).replace(os.sep, '/')
            seen.setdefault(os.path.basename(dirpath), top)

for p in problems:
    print(p)
print(f'layering: {len(problems)} problem(s)')
sys.exit(1 if problems else 0)
