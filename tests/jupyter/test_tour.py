"""samples/tour.ipynb, executed headless with nbclient against the installed Weft kernel: every
cell runs (the one tagged `raises-exception` fails with its code), and every output matches the
committed one: the same kinds of output with the same mime types, and the same text, numbers
within float tolerance. Cells tagged `varies` (timings) are checked for their kinds of output
only; stderr (the executor notice, which depends on the machine) is not compared.

`python tests/jupyter/test_tour.py --write` executes the notebook and commits its outputs."""

import copy
import math
import pathlib
import re
import sys
import unittest

import nbformat
from nbclient import NotebookClient

TOUR = pathlib.Path(__file__).resolve().parents[2] / "samples" / "tour.ipynb"
NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?|-?\d+")


def execute(notebook):
    client = NotebookClient(
        notebook, kernel_name="weft", timeout=300, record_timing=False, resources={"metadata": {"path": str(TOUR.parent)}}
    )
    client.execute()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
    return notebook


def kinds(cell):
    """Each output's type and mime types (or stream name)."""
    out = []
    for output in cell.outputs:
        if output.output_type == "stream":
            out.append(("stream", output.name))
        elif output.output_type == "error":
            out.append(("error", output.ename))
        else:
            out.append((output.output_type, tuple(sorted(output.data))))
    return out


def texts(cell):
    out = []
    for output in cell.outputs:
        if output.output_type == "stream":
            out.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            out.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            out.append(output.evalue)
    return out


def same_text(expected, actual):
    """Equal but for the last digits of floats (summation order may differ by executor)."""
    if NUMBER.sub("#", expected) != NUMBER.sub("#", actual):
        return False
    for e, a in zip(NUMBER.findall(expected), NUMBER.findall(actual)):
        if ("." in e) != ("." in a):
            return False
        if not math.isclose(float(e), float(a), rel_tol=1e-4, abs_tol=1e-6):
            return False
    return True


class TourNotebookTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.committed = nbformat.read(TOUR, as_version=4)
        cls.fresh = execute(copy.deepcopy(cls.committed))

    def code_cells(self):
        pairs = zip(self.committed.cells, self.fresh.cells)
        return [(c, f) for c, f in pairs if c.cell_type == "code"]

    def test_every_output_matches_the_committed_one(self):
        for committed, fresh in self.code_cells():
            with self.subTest(cell=committed.source.splitlines()[0]):
                self.assertTrue(committed.outputs, "the committed notebook has outputs (run with --write)")
                self.assertEqual(kinds(committed), kinds(fresh))
                if "varies" in committed.metadata.get("tags", []):
                    continue
                for expected, actual in zip(texts(committed), texts(fresh)):
                    self.assertTrue(same_text(expected, actual), f"{expected!r} != {actual!r}")

    def test_the_tour_shows_tables_charts_and_kernels(self):
        outputs = {cell.source.splitlines()[0]: cell.outputs for _, cell in self.code_cells()}
        [ys] = outputs["def normalise(xs):"]
        self.assertIn("<table", ys.data["text/html"])
        self.assertIn("[f32; 100000]", ys.data["text/html"])
        self.assertIn("image/svg+xml", outputs["ts = [f32(i) / 50.0 for i in range(500)]"][0].data)
        self.assertIn("image/svg+xml", outputs["hist(xs, 20)"][0].data)
        [mandelbrot] = outputs["def escape(cr, ci):"]
        self.assertIn("image/png", mandelbrot.data)
        self.assertEqual(mandelbrot.data["text/plain"], "<image of 100 × 80 pixels>")
        [graph] = outputs["%fusion normalise(xs)"]
        self.assertTrue(graph.data["image/svg+xml"].startswith("<svg"))
        [kernels] = outputs["%wgsl [x * 2.0 for x in xs]"]
        self.assertIn("@compute", kernels.data["text/plain"])
        [error] = outputs["rows[12]"]
        self.assertEqual((error.output_type, error.ename), ("error", "E0400"))
        [after] = outputs["len(rows)"]
        self.assertEqual(after.data["text/plain"], "12")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        nbformat.write(execute(nbformat.read(TOUR, as_version=4)), TOUR)
    else:
        unittest.main()
