"""Edit-to-plan latency of `weft lsp` on a file, as an editor sees it.

Opens the file, waits for its first fusion plan (the server's workspace/inlayHint/refresh),
then inserts a line at a time, alternately a top-level statement and a function's first
statement, and times each until its plan's refresh. A fourth argument, a regular expression,
makes every edit a first statement of a function whose name it matches (recursive functions,
which are planned on their own, against the others, which are inlined into the top level). Prints each edit, the median and maximum,
and the server's peak resident memory. With PERF=FILE it records the server with `perf` from
the first edit on.

    python3 scripts/replan.py target/release/weft target/lsp-bench.weft 20
    python3 scripts/replan.py target/release/weft target/lsp-bench.weft 20 'quicksort|hull_side|walk'

(`cargo bench --bench lsp` writes target/lsp-bench.weft, the 2,000-line benchmark file.)
"""
import json, subprocess, sys, time, re

weft, path = sys.argv[1], sys.argv[2]
edits = int(sys.argv[3]) if len(sys.argv) > 3 else 10
only = re.compile(sys.argv[4]) if len(sys.argv) > 4 else None
text = open(path).read()
proc = subprocess.Popen([weft, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(msg):
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); proc.stdin.flush()
def read():
    length = 0
    while True:
        line = proc.stdout.readline()
        if line in (b"\r\n", b""): break
        if line.lower().startswith(b"content-length"): length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))
def until(pred):
    while True:
        m = read()
        if m.get("method") == "workspace/inlayHint/refresh" or (m.get("id") is not None and "method" in m):
            if "id" in m: send({"jsonrpc": "2.0", "id": m["id"], "result": None})
        if pred(m): return m
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"workspace": {"inlayHint": {"refreshSupport": True}}}}})
until(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
uri = "file:///replan.weft"
t0 = time.time()
send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "weft", "version": 1, "text": text}}})
until(lambda m: m.get("method") == "workspace/inlayHint/refresh")
print(f"first plan {time.time()-t0:.2f} s")
import os, signal
perf = None
if os.environ.get("PERF"):
    perf = subprocess.Popen(["perf", "record", "-F", "300", "--call-graph", "dwarf,16384", "-p", str(proc.pid), "-o", os.environ["PERF"]], stderr=subprocess.DEVNULL)
    time.sleep(1)
lines = text.split("\n")
tops = [i for i, l in enumerate(lines) if l and not l[0] in " #)]" and not l.startswith(("def", "else", "elif"))]
defs = [i for i, l in enumerate(lines) if l.startswith("def ") and (only is None or only.search(l))]
if not defs or not tops:
    sys.exit(f"{path}: no function{' matching ' + sys.argv[4] if only else ''} or no top-level statement to edit")
version = 1
times = []
for k in range(edits):
    # Alternate: a new top-level statement, and a new first statement in a function's body.
    if k % 2 == 0 and only is None:
        at = tops[(k * 37) % len(tops)]
        new = f"edit_{k} = {k} + 1"
    else:
        at = defs[(k * 13) % len(defs)] + 1
        indent = re.match(r"\s*", lines[at]).group(0) or "    "
        new = f"{indent}edit_{k} = {k} + 1"
    version += 1
    lines.insert(at, new)
    t = time.time()
    send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": "\n".join(lines)}]}})
    tops = [i + (1 if i >= at else 0) for i in tops]
    defs = [i + (1 if i >= at else 0) for i in defs]
    until(lambda m: m.get("method") == "workspace/inlayHint/refresh")
    times.append((time.time() - t) * 1000)
    print(f"edit {k} ({'top level' if k % 2 == 0 and only is None else 'function'}) line {at}: {times[-1]:.0f} ms", flush=True)
s = sorted(times)
print(f"median {s[len(s)//2]:.0f} ms, max {s[-1]:.0f} ms")
rss = open(f"/proc/{proc.pid}/status").read()
print([l for l in rss.split("\n") if l.startswith("VmHWM")])
if perf: perf.send_signal(signal.SIGINT); perf.wait()
proc.terminate(); proc.wait()
