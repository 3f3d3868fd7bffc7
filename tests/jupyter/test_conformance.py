"""The Jupyter project's conformance suite (jupyter_kernel_test) against the installed Weft
kernel, with every check it offers filled in."""

import unittest

import jupyter_kernel_test


class WeftKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "weft"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The first cell says once which executor runs the cells (a stderr stream), which the
        # suite's exact output counts do not expect.
        cls.kc.execute_interactive("0", timeout=30, output_hook=lambda msg: None)

    language_name = "weft"
    file_extension = ".weft"

    code_hello_world = 'print("hello, world")'
    # A warning does not stop the cell; it goes to stderr.
    code_stderr = "zs = [x for (x, y) in zip(range(3), filter(lambda v: v >= 0, range(3)))]"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "xs = 1\nx", "matches": {"xs"}},
    ]
    complete_code_samples = ["1 + 2", "def f(x):\n    return x\n", "xs = [1,\n 2]"]
    incomplete_code_samples = ["def f(x):", "xs = [1,", "for i in range(3):"]
    invalid_code_samples = ["xs = 1)"]

    code_generate_error = "[1, 2][5]"

    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": "sum([x * x for x in range(10)])", "result": "285"},
        {"code": "[1.5, 2.5]", "result": "[1.5, 2.5]"},
    ]
    code_history_pattern = "6 *"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "len"

    code_display_data = [
        {"code": "plot([0.0, 1.0, 2.0], [0.0, 1.0, 4.0])", "mime": "image/svg+xml"},
        {"code": "hist([1, 2, 2, 3], 3)", "mime": "image/svg+xml"},
        {"code": "image([[i * j for j in range(100)] for i in range(100)])", "mime": "image/png"},
    ]


if __name__ == "__main__":
    unittest.main()
