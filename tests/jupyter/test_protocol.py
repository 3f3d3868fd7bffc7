"""What the conformance suite does not check: a message with a bad signature is dropped and the
kernel answers the next good one; an interrupt stops a running cell and the next cell runs."""

import base64
import time
import unittest

from jupyter_client.manager import start_new_kernel


class WeftKernelProtocolTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name="weft")

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel()

    def execute(self, code, timeout=30):
        msg_id = self.kc.execute(code)
        return self.kc.get_shell_msg(timeout=timeout), msg_id

    def test_a_badly_signed_message_is_dropped_and_a_good_one_answered(self):
        session = self.kc.session
        good_key = session.key
        # Sign one request with the wrong key: the kernel must not answer it.
        session.key = b"not-the-key"
        bad = session.msg("kernel_info_request", {})
        self.kc.shell_channel.send(bad)
        session.key = good_key
        good = session.msg("kernel_info_request", {})
        self.kc.shell_channel.send(good)
        reply = self.kc.get_shell_msg(timeout=10)
        self.assertEqual(reply["parent_header"]["msg_id"], good["header"]["msg_id"])
        self.assertEqual(reply["content"]["status"], "ok")
        # Nothing else arrives: the bad request got no answer.
        with self.assertRaises(Exception):
            self.kc.get_shell_msg(timeout=1)

    def test_an_interrupt_stops_a_long_cell_and_the_next_cell_runs(self):
        reply, _ = self.execute("kept = 41")
        self.assertEqual(reply["content"]["status"], "ok")
        msg_id = self.kc.execute("i = 0\nwhile True:\n    i = i + 1\n")
        time.sleep(1.0)
        requested = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=30)
        stopped = time.monotonic() - requested
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "E0410")
        self.assertLess(stopped, 2.0, "the interrupt took effect within 2 s")
        reply, msg_id = self.execute("kept + 1")
        self.assertEqual(reply["content"]["status"], "ok")
        result = None
        while True:
            msg = self.kc.get_iopub_msg(timeout=10)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "execute_result":
                result = msg["content"]["data"]["text/plain"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        self.assertEqual(result, "42")

    def outputs(self, code):
        """The iopub messages a cell sends, up to its idle status."""
        msg_id = self.kc.execute(code)
        reply = self.kc.get_shell_msg(timeout=30)
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        messages = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=10)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
            messages.append(msg)

    def result(self, code):
        [data] = [m["content"]["data"] for m in self.outputs(code) if m["msg_type"] == "execute_result"]
        return data

    def test_results_carry_html_with_their_type_and_shape(self):
        data = self.result("[[1, 2], [3, 4]]")
        self.assertEqual(data["text/plain"], "[[1, 2], [3, 4]]")
        self.assertIn("[[i32; 2]; 2]", data["text/html"])
        self.assertIn("2 × 2", data["text/html"])
        data = self.result("6 * 7")
        self.assertEqual(data["text/plain"], "42")
        self.assertIn("<pre", data["text/html"])

    def test_sequences_are_tables_capped_in_size(self):
        html = self.result("[[i * 100 + j for j in range(50)] for i in range(1000)]")["text/html"]
        self.assertIn("<table", html)
        self.assertIn("<caption", html)
        self.assertIn("[[i32; 50]; 1000]", html)
        # The header, ten rows of the thousand (nine and the last), a row for the rest.
        self.assertEqual(html.count("<tr><th>"), 12)
        self.assertIn("<tr><th>999</th>", html)
        self.assertIn("<code>99949</code>", html)
        self.assertNotIn("<code>900</code>", html)
        # Ragged rows: no column headers, and each row as long as it is (an empty one too).
        ragged = self.result("[[j for j in range(i % 3)] for i in range(4)]")["text/html"]
        self.assertNotIn("<thead>", ragged)
        self.assertIn("<tr><th>0</th></tr>", ragged)
        self.assertIn("<tr><th>2</th><td style=\"text-align:right\"><code>0</code></td><td", ragged)
        pairs = self.result("[(i, f32(i) / 2.0) for i in range(3)]")["text/html"]
        self.assertIn("<th>.0</th><th>.1</th>", pairs)
        self.assertIn("<code>1.0</code>", pairs)

    def test_charts_are_display_data(self):
        [plot] = [m for m in self.outputs("plot([0, 1, 2], [0.0, 1.0, 4.0])") if m["msg_type"] == "display_data"]
        data = plot["content"]["data"]
        self.assertEqual(data["text/plain"], "<plot of 3 points>")
        self.assertTrue(data["image/svg+xml"].startswith("<svg"))
        self.assertIn("<polyline", data["image/svg+xml"])
        [image] = [
            m
            for m in self.outputs("image([[i + j for j in range(80)] for i in range(60)])")
            if m["msg_type"] == "display_data"
        ]
        png = base64.b64decode(image["content"]["data"]["image/png"])
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n"))
        # A chart that cannot be drawn is an error of the cell, as on every executor.
        msg_id = self.kc.execute("hist([1.0, 2.0], 0)")
        reply = self.kc.get_shell_msg(timeout=30)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["ename"], "E0406")

    def test_diagnostics_name_the_cell_by_its_execution_count(self):
        # A silent input takes no execution count, and no cell number either.
        self.kc.execute("1 + 1", silent=True)
        self.kc.get_shell_msg(timeout=30)
        self.kc.execute("[1, 2][7]")
        reply = self.kc.get_shell_msg(timeout=30)["content"]
        self.assertEqual(reply["ename"], "E0400")
        self.assertIn(f"cell[{reply['execution_count']}]:1:", "\n".join(reply["traceback"]))

    def test_magics_answer_as_the_repl_commands_do(self):
        self.outputs("def sq_sum(xs):\n    return sum([x * x for x in xs if x > 0.0])\nvs = [1.0, -2.0, 3.0]")
        [graph] = [m for m in self.outputs("%fusion sq_sum(vs)") if m["msg_type"] == "display_data"]
        data = graph["content"]["data"]
        self.assertIn("fusion plan (schema 1)", data["text/plain"])
        svg = data["image/svg+xml"]
        self.assertTrue(svg.startswith("<svg"))
        # Every kernel of the plan is a box in the graph, and the reasons ops stayed apart show.
        kernels = [line.split()[0] for line in data["text/plain"].splitlines() if line.startswith("k")]
        self.assertGreaterEqual(len(kernels), 2)
        for kernel in kernels:
            self.assertIn(kernel, svg)
        self.assertIn("kept apart", svg)
        [wgsl] = [m for m in self.outputs("%wgsl sq_sum(vs)") if m["msg_type"] == "display_data"]
        html = wgsl["content"]["data"]["text/html"]
        self.assertIn("<span style=", html, "the kernels are highlighted")
        self.assertIn("@compute", wgsl["content"]["data"]["text/plain"])
        [ir] = [m for m in self.outputs("%ir sq_sum(vs)") if m["msg_type"] == "stream"]
        self.assertIn("reduce", ir["content"]["text"])
        timed = self.outputs("%time sq_sum(vs)")
        self.assertIn("10.0", [m["content"]["data"]["text/plain"] for m in timed if m["msg_type"] == "execute_result"])
        self.assertTrue(any("compile" in m["content"].get("text", "") for m in timed if m["msg_type"] == "stream"))
        # The REPL's `:` works too, and a command that does not parse is a usage error.
        [typed] = [m for m in self.outputs(":type sq_sum") if m["msg_type"] == "stream"]
        self.assertIn("sq_sum : ", typed["content"]["text"])
        self.kc.execute("%nonsense")
        reply = self.kc.get_shell_msg(timeout=30)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "UsageError")
        self.assertIn("unknown command", reply["content"]["evalue"])


if __name__ == "__main__":
    unittest.main()
