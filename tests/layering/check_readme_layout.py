#!/usr/bin/env python3
"""The README's layout table matches the tree (ctest entry `layout_table`).

Every top-level folder of the source tree has a row in README.md's "Layout" table, and every row
names a folder that exists. Within a row, each folder named in backticks (`graph/`, or
`tests/fuzz/` from the top) exists; and in the rows of the libraries and of config/, every
subfolder is named, so a new one cannot be added without saying what it holds.
Fails listing each mismatch.
"""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
# Rows whose subfolders must all be named: the libraries and the shipped configs.
described_in_full = {'core', 'actors', 'interop', 'devices', 'collectives', 'transport', 'simulator', 'messages',
                     'config', 'python'}


def tracked_folders():
    """Folders holding tracked files (build folders and other leftovers are not the tree)."""
    try:
        files = subprocess.run(['git', '-C', root, 'ls-files'], check=True, capture_output=True,
                               text=True).stdout.split('\n')
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
        files = [f for f in files if not re.match(r'(build|out)[^/]*/|\.', f)]
    folders = set()
    for f in files:
        parts = f.split('/')[:-1]
        for i in range(1, len(parts) + 1):
            folders.add('/'.join(parts[:i]))
    return {f for f in folders if not f.startswith('.')}


def layout_rows():
    text = open(os.path.join(root, 'README.md'), encoding='utf-8').read()
    section = re.search(r'^## Layout\n(.*?)(?=^## )', text, re.S | re.M)
    if not section:
        sys.exit('README.md has no "## Layout" section')
    rows = {}
    for line in section.group(1).splitlines():
        m = re.match(r'\| `([^`]+)/` \|[^|]*\|(.*)\|\s*$', line)
        if m:
            rows[m.group(1)] = re.findall(r'`([^`\s]+)/`', m.group(2))
    return rows


def main():
    folders = tracked_folders()
    top = {f for f in folders if '/' not in f}
    rows = layout_rows()
    problems = [f'{f}/ has no row in the README\'s layout table' for f in sorted(top - rows.keys())]
    problems += [f'the layout table\'s row {f}/ names no folder of the tree' for f in sorted(rows.keys() - top)]
    for folder, named in sorted(rows.items()):
        if folder not in top:
            continue
        paths = {n if n.startswith(folder + '/') else f'{folder}/{n}' for n in named}
        problems += [f'row {folder}/ names `{p}/`, which is not in the tree' for p in sorted(paths - folders)]
        if folder in described_in_full:
            children = {f for f in folders if f.startswith(folder + '/') and f.count('/') == 1}
            problems += [f'row {folder}/ does not name {c}/' for c in sorted(children - paths)]
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f'layout table: {len(rows)} rows match the tree')


main()
