"""Reader for taihu tree workload files (core/graph/tree_workload_io.hpp).

    taihu-tree-workload 1
    # comment lines (provenance), optional
    name sst-like
    vocabulary 20000
    classes 5
    trees 8544
    vertices 319382
    then per tree three lines of space-separated integers:
      parent of each vertex (root = -1; parent > child, so the root is last;
        a vertex's children are listed in increasing id order: left, right)
      token id of each vertex (-1 = none; internal tree vertices have none)
      label of each vertex (-1 = none)

Write these files with build/bench/make_tree_workload; this module only reads
them. Errors name the file and line, like the C++ reader.
"""

import numpy as np

MAGIC = "taihu-tree-workload"
VERSION = 1


class WorkloadError(ValueError):
    pass


class Tree:
    """One tree: parent/token/label arrays plus derived child lists.

    left/right hold the first/second child of each vertex (-1 if absent);
    `children` has every vertex's children for trees of higher arity."""

    __slots__ = ("parents", "tokens", "labels", "heights", "left", "right", "max_arity")

    def __init__(self, parents, tokens, labels):
        self.parents = parents
        self.tokens = tokens
        self.labels = labels
        n = len(parents)
        heights = [0] * n
        left = [-1] * n
        right = [-1] * n
        arity = [0] * n
        for v, p in enumerate(parents.tolist()):
            if p < 0:
                continue
            if arity[p] == 0:
                left[p] = v
            elif arity[p] == 1:
                right[p] = v
            arity[p] += 1
            if heights[v] + 1 > heights[p]:
                heights[p] = heights[v] + 1
        self.heights = np.asarray(heights, dtype=np.int64)
        self.left = np.asarray(left, dtype=np.int64)
        self.right = np.asarray(right, dtype=np.int64)
        self.max_arity = max(arity) if n else 0

    def __len__(self):
        return len(self.parents)

    @property
    def height(self):
        return int(self.heights[-1])


class Workload:
    def __init__(self, name, vocabulary_size, num_classes, comments, trees):
        self.name = name
        self.vocabulary_size = vocabulary_size
        self.num_classes = num_classes
        self.comments = comments
        self.trees = trees

    @property
    def num_vertices(self):
        return sum(len(t) for t in self.trees)


def _ints(text, path, lineno, what):
    try:
        return np.array(text.split(), dtype=np.int64) if text.strip() else np.zeros(0, np.int64)
    except ValueError:
        raise WorkloadError(f"{path}:{lineno}: tree workload: a {what} is not an integer") from None


def read_workload(path):
    with open(path, "r", encoding="ascii") as f:
        lines = f.read().split("\n")
    pos = 0

    def next_line(expected):
        nonlocal pos
        if pos >= len(lines) or (pos == len(lines) - 1 and lines[pos] == ""):
            raise WorkloadError(f"{path}:{pos + 1}: tree workload: unexpected end of file, expected {expected}")
        pos += 1
        return lines[pos - 1].rstrip("\r")

    def fail(msg):
        raise WorkloadError(f"{path}:{pos}: tree workload: {msg}")

    first = next_line("the header").split()
    if len(first) != 2 or first[0] != MAGIC:
        fail(f"not a tree workload: expected '{MAGIC} {VERSION}' on the first line")
    if first[1] != str(VERSION):
        fail(f"format version {first[1]} is not supported (this reader reads version {VERSION})")
    comments = []
    line = next_line("the header")
    while line.startswith("#"):
        comments.append(line[1:].strip())
        line = next_line("the header")
    header = {}
    for key in ("name", "vocabulary", "classes", "trees", "vertices"):
        parts = line.split(" ", 1)
        if parts[0] != key or len(parts) != 2:
            fail(f"expected the header line '{key} ...', got '{line}'")
        header[key] = parts[1]
        if key != "vertices":
            line = next_line("the header")
    try:
        vocab, classes, count, declared = (int(header[k]) for k in ("vocabulary", "classes", "trees", "vertices"))
    except ValueError:
        fail("a header count is not an integer")
    trees = []
    for t in range(count):
        parents = _ints(next_line(f"tree {t}'s parent line"), path, pos, "parent")
        n = len(parents)
        if n == 0:
            fail(f"tree {t}: empty parent line")
        idx = np.arange(n)
        if parents[-1] != -1:
            fail(f"tree {t}: the last vertex must be the root (parent -1)")
        bad = (parents[:-1] <= idx[:-1]) | (parents[:-1] >= n)
        if bad.any():
            v = int(np.argmax(bad))
            fail(f"tree {t}: vertex {v} has parent {parents[v]}; parents must come after their children")
        tokens = _ints(next_line(f"tree {t}'s token line"), path, pos, "token")
        if len(tokens) != n or tokens.min() < -1 or tokens.max() >= vocab:
            fail(f"tree {t}: token line has the wrong length or a token outside [-1, {vocab})")
        labels = _ints(next_line(f"tree {t}'s label line"), path, pos, "label")
        if len(labels) != n or labels.min() < -1 or labels.max() >= classes:
            fail(f"tree {t}: label line has the wrong length or a label outside [-1, {classes})")
        trees.append(Tree(parents, tokens, labels))
    total = sum(len(t) for t in trees)
    if total != declared:
        raise WorkloadError(f"{path}: the trees have {total} vertices in all, but the header declares {declared}")
    return Workload(header["name"], vocab, classes, comments, trees)
