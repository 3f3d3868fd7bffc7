"""What the conformance suite does not check: a message with a bad signature is dropped and the
kernel answers the next good one; an interrupt stops a running cell and the next cell runs."""

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

    def test_results_carry_html_with_their_type_and_shape(self):
        msg_id = self.kc.execute("[[1, 2], [3, 4]]")
        self.kc.get_shell_msg(timeout=30)
        while True:
            msg = self.kc.get_iopub_msg(timeout=10)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_result":
                break
        data = msg["content"]["data"]
        self.assertEqual(data["text/plain"], "[[1, 2], [3, 4]]")
        self.assertIn("[[i32; 2]; 2]", data["text/html"])
        self.assertIn("2 × 2", data["text/html"])


if __name__ == "__main__":
    unittest.main()
