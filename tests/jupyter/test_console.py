"""`jupyter console` driven with piped input: results, an error that keeps the session, and
printed output, each in its cell."""

import os
import subprocess
import sys
import unittest


class WeftConsoleTests(unittest.TestCase):
    def test_piped_cells_show_results_errors_and_prints(self):
        console = os.path.join(os.path.dirname(sys.executable), "jupyter-console")
        cells = "xs = [1.0, 2.0, 3.0]\nsum(xs)\n[1, 2][5]\nprint(len(xs))\n"
        done = subprocess.run(
            [console, "--kernel", "weft", "--simple-prompt"],
            input=cells, capture_output=True, text=True, timeout=120,
        )
        # The console writes tracebacks to stderr.
        out = done.stdout + done.stderr
        self.assertIn("Out[2]: 6.0", out)
        self.assertIn("E0400/index-out-of-range", out)
        self.assertIn("cell[3]:1:1", out)
        # The error left `xs` bound: the next cell prints its length.
        self.assertIn("In [4]: 3", out)


if __name__ == "__main__":
    unittest.main()
