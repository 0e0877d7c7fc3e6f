#!/usr/bin/env python3
"""The layout is by layer, and this keeps it so (ctest entry `layering`).

Each top-level folder is one library (CMakeLists.txt); a folder may include
only itself and the folders below it:

    core                              plain C++
    collectives, transport, devices   plain C++ on core
    simulator                         plain C++ on collectives
    interop                           plain C++ on core (other frameworks' model files)
    messages                          CAF message types on core
    actors                            every actor, on all of the above
    apps, python, bench, tests        on anything

Plain-C++ folders never include CAF. No two code folders share a name (as
core/graph and actors/graph once did), so a path says which layer it is in.
Fails listing every offending include (file:line) or clash.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
root = os.path.abspath(root)

allowed = {
    'core': {'core'},
    'collectives': {'core', 'collectives'},
    'transport': {'core', 'transport'},
    'devices': {'core', 'devices'},
    'simulator': {'core', 'collectives', 'simulator'},
    'interop': {'core', 'interop'},
    'messages': {'core', 'messages'},
    'actors': {'core', 'collectives', 'transport', 'devices', 'simulator', 'messages', 'actors'},
}
plain = {'core', 'collectives', 'transport', 'devices', 'simulator', 'interop'}
include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')

problems = []
for layer in allowed:
    top = os.path.join(root, layer)
    for dirpath, _, names in os.walk(top):
        for name in names:
            if not name.endswith(('.hpp', '.cpp', '.h')):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding='utf-8') as f:
                for number, line in enumerate(f, 1):
                    m = include.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    first = target.split('/')[0]
                    if layer in plain and first == 'caf':
                        problems.append(f'{rel}:{number}: plain C++ ({layer}/) includes CAF: {target}')
                    elif first in allowed and first not in allowed[layer]:
                        problems.append(f'{rel}:{number}: {layer}/ may not include {first}/ (a higher or a sibling '
                                        f'layer): {target}')

# Folder names are unique across the code folders.
seen = {}
for layer in allowed:
    for dirpath, dirnames, _ in os.walk(os.path.join(root, layer)):
        for d in dirnames:
            rel = os.path.relpath(os.path.join(dirpath, d), root)
            if d in seen and seen[d] != rel:
                problems.append(f'folder name clash: {seen[d]}/ and {rel}/')
            seen.setdefault(d, rel)
        seen.setdefault(os.path.basename(dirpath), os.path.relpath(dirpath, root))

for p in problems:
    print(p)
print(f'layering: {len(problems)} problem(s)')
sys.exit(1 if problems else 0)
