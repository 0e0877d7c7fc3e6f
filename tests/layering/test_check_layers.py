#!/usr/bin/env python3
"""check_layers.py finds what each kind of rule forbids (ctest entry `layering_rules`):
run over a made-up tree holding one breach of every kind, and over the same
tree without them."""
import os
import subprocess
import sys
import tempfile
import unittest

checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_layers.py')

RULES = """\
library low: low
library high: low high
plain low
acyclic low
distinct low high
forbid low/data/ -> low/train/: readers know nothing of the trainer
"""

CLEAN = {
    'low/blas/blas.cpp': '#include "low/pool/pool.hpp"\n',
    'low/pool/pool.hpp': '#include <vector>\n',
    'low/train/train.cpp': '#include "low/data/reader.hpp"\n',
    'low/data/reader.hpp': '',
    'high/actor/actor.cpp': '#include "caf/all.hpp"\n#include "low/train/train.cpp"\n',
}


def run(files, rules=RULES):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.write(text)
        with open(os.path.join(root, 'rules.txt'), 'w') as f:
            f.write(rules)
        out = subprocess.run([sys.executable, checker, root, os.path.join(root, 'rules.txt')],
                             capture_output=True, text=True)
        return out.returncode, out.stdout


class CheckLayers(unittest.TestCase):
    def test_clean_tree_passes(self):
        self.assertEqual(run(CLEAN), (0, 'layering: 0 problem(s)\n'))

    def breach(self, path, text, expected):
        rc, out = run({**CLEAN, path: text})
        self.assertEqual(rc, 1, out)
        self.assertIn(expected, out)
        self.assertIn('layering: 1 problem(s)', out)

    def test_a_higher_layer(self):
        self.breach('low/data/reader.hpp', '#include "high/actor/actor.hpp"\n',
                    'low/data/reader.hpp:1: low/ may not include high/')

    def test_caf_in_plain_code(self):
        self.breach('low/data/reader.hpp', '\n#include <caf/actor.hpp>\n',
                    'low/data/reader.hpp:2: plain C++ (low/) includes CAF')

    def test_a_cycle_of_modules(self):
        self.breach('low/pool/pool.hpp', '#include "low/blas/blas.hpp"\n',
                    'modules of low/ include each other in a cycle: low/blas -> low/pool (low/blas/blas.cpp:1); '
                    'low/pool -> low/blas (low/pool/pool.hpp:1)')

    def test_a_subfolder_is_its_modules(self):  # low/blas/x/ belongs to low/blas: no cycle with itself
        rc, out = run({**CLEAN, 'low/blas/x/y.hpp': '#include "low/blas/blas.cpp"\n',
                       'low/blas/z.hpp': '#include "low/blas/x/y.hpp"\n'})
        self.assertEqual(rc, 0, out)

    def test_a_forbidden_file(self):
        rc, out = run({**CLEAN, 'low/data/reader.hpp': '#include "low/train/progress.hpp"\n',
                       'low/train/train.cpp': ''})
        self.assertEqual(rc, 1, out)
        self.assertIn('low/data/reader.hpp:1: includes low/train/progress.hpp, but low/data/ may not include '
                      'low/train/: readers know nothing of the trainer', out)

    def test_a_folder_name_twice(self):
        self.breach('high/pool/other.hpp', '', 'folder name clash: low/pool/ and high/pool/')

    def test_an_unreadable_rule(self):
        rc, out = run(CLEAN, RULES + 'forbid low/ high/\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('rules.txt:7: cannot read this rule: forbid low/ high/', out)


if __name__ == '__main__':
    unittest.main()
