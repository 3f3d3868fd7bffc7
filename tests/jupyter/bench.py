"""The kernel's latencies, for docs/performance.md (not a test: run it by hand).

    cargo build --release
    target/jupyter-venv/bin/python tests/jupyter/bench.py target/release/weft

- start: from starting the process to the `kernel_info_reply` (10 starts);
- round trip: `execute_request` to `execute_reply` of a small expression, p50 and p95 over 100
  inputs after 20 of warm-up, on the cpu and gpu executors; each input is new text;
- interrupt: from `interrupt_kernel()` to the interrupted cell's `execute_reply`, for a loop
  whose every step is a small parallel op (5 trials per executor).
"""

import json
import os
import statistics
import sys
import tempfile
import time

from jupyter_client.manager import KernelManager

WEFT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/weft")


def kernelspec(root, backend):
    name = f"weft-{backend}"
    path = os.path.join(root, "kernels", name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "kernel.json"), "w") as f:
        json.dump({"argv": [WEFT, "kernel", "--backend", backend, "--connection-file", "{connection_file}"],
                   "display_name": name, "language": "weft", "interrupt_mode": "message"}, f)
    return name


def start(name):
    km = KernelManager(kernel_name=name)
    began = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc, time.perf_counter() - began


def ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


def main():
    root = tempfile.mkdtemp()
    os.environ["JUPYTER_PATH"] = root
    for backend in ("cpu", "gpu"):
        name = kernelspec(root, backend)
        starts = []
        for _ in range(10):
            km, kc, took = start(name)
            starts.append(took)
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        print(f"{backend}: start to kernel_info_reply p50 {ms(statistics.median(starts))}, max {ms(max(starts))}")

        km, kc, _ = start(name)
        times = []
        for i in range(120):
            began = time.perf_counter()
            kc.execute_interactive(f"sum([x * x for x in range(1000)]) + {i}", timeout=60,
                                   output_hook=lambda msg: None)
            if i >= 20:
                times.append(time.perf_counter() - began)
        times.sort()
        print(f"{backend}: execute_request to execute_reply p50 {ms(times[len(times) // 2])}, "
              f"p95 {ms(times[int(len(times) * 0.95)])}")

        delays = []
        for _ in range(5):
            msg_id = kc.execute("i = 0\nwhile True:\n    xs = [x * 2 for x in range(1000)]\n    i = i + 1\n")
            time.sleep(0.5)
            began = time.perf_counter()
            km.interrupt_kernel()
            while True:
                reply = kc.get_shell_msg(timeout=30)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
            delays.append(time.perf_counter() - began)
            assert reply["content"]["status"] == "error", reply["content"]
        print(f"{backend}: interrupt to reply p50 {ms(statistics.median(delays))}, max {ms(max(delays))}")
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
