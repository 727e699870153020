"""The HTTP stacks krmfn could use for the runner and set-image's registry client, measured side by side.

    python bench/http_stacks.py            # 2,000 requests, 20,000 watch lines, 5 rounds
    python bench/http_stacks.py --quick    # smoke (the test suite runs this)

A loopback HTTP/1.1 server runs in its own process (so its CPU is not counted); each stack runs in a
fresh process of its own (so its imports and memory are its own) and is measured on what the runner does:

- CPU per request: keep-alive GETs of a 1.3 KB JSON object (a ConfigMap as the API server answers it),
  each body read whole and parsed, median of the rounds (``time.process_time`` around the loop);
- CPU per watch line: one chunked answer of N event lines, read line by line and parsed;
- import: seconds to import the stack, and the process's peak RSS after the requests;
- deadline: how long a request with a 1 s timeout lasts against a server that trickles one byte every
  0.2 s (a timeout per read never fires there: "no" when the request still runs after 4 s);
- ceiling: the peak RSS growth while reading at most 4 MiB of an answer that never ends.

The stacks: ``krmfn.net`` (this project's), the standard library's ``http.client`` (the runner's unary
wire before krmfn.net), ``httpx`` (set-image's client before) and ``httpx2`` (lightkube 1.x's client).
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hostile_server import next_head  # noqa: E402

STACKS = ("krmfn.net", "http.client", "httpx", "httpx2")
INSTALL = {"httpx": "pip install httpx", "httpx2": "pip install httpx2 (lightkube installs it)"}
OBJECT = json.dumps({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "app-config", "namespace": "apps", "uid": "9f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b",
                 "resourceVersion": "123456", "creationTimestamp": "2026-12-01T18:00:00Z",
                 "labels": {"applyset.kubernetes.io/part-of": "applyset-abc-v1", "app": "shop"},
                 "managedFields": [{"manager": "krmfn", "operation": "Apply", "apiVersion": "v1",
                                    "time": "2026-12-01T18:00:00Z", "fieldsType": "FieldsV1",
                                    "fieldsV1": {"f:data": {"f:k" + str(i): {} for i in range(12)}}}]},
    "data": {f"k{i}": f"value-{i}" * 3 for i in range(12)},
}).encode()  # fmt: skip
EVENT = b'{"type":"MODIFIED","object":' + OBJECT + b"}\n"


# --- the server (its own process) -----------------------------------------------------------------------


def serve() -> None:
    """Answers on a free loopback port, printed on stdout: /object, /watch?n=N, /trickle, /flood."""
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)

    def handle(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        with conn:
            while (found := next_head(conn, buf)) is not None:
                head, buf = found
                path = head.split(b" ", 2)[1].decode()
                if path.startswith("/watch"):
                    count = int(path.partition("n=")[2] or 1)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
                    batch = EVENT * 50
                    for _ in range(count // 50):
                        conn.sendall(b"%x\r\n%s\r\n" % (len(batch), batch))
                    conn.sendall(b"0\r\n\r\n")
                elif path == "/trickle":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                    try:
                        for _ in range(100):
                            conn.sendall(b"x")
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                elif path == "/flood":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
                    chunk = b"y" * 65536
                    try:
                        while True:
                            conn.sendall(chunk)
                    except OSError:
                        return
                else:
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    conn.sendall(head % len(OBJECT) + OBJECT)

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


# --- one stack (its own process) ------------------------------------------------------------------------


class Client:
    """What the benchmark asks of a stack."""

    get: Callable[[str], bytes]
    lines: Callable[[str], Iterator[bytes]]
    trickle: Callable[[float], None]
    flood_prefix: Callable[[int], int]


def krmfn_net(port: int) -> Client:
    from krmfn.net.budget import Timer
    from krmfn.net.ceilings import LOGS, OBJECT, WATCH, Ceiling
    from krmfn.net.wire import Pool, Request

    pool = Pool("127.0.0.1", port)
    client = Client()

    def get(path: str) -> bytes:
        return bytes(pool.open(Request("GET", path), Timer(OBJECT)).read_all(OBJECT.max_bytes))

    def lines(path: str) -> Iterator[bytes]:
        return pool.open(Request("GET", path), Timer(WATCH)).lines(WATCH.max_line, WATCH.max_bytes)

    def trickle(timeout: float) -> None:
        short = Ceiling("answer", 1 << 20, total=timeout, idle=timeout)
        pool.open(Request("GET", "/trickle"), Timer(short)).read_all(1 << 20)

    def flood(limit: int) -> int:
        return len(pool.open(Request("GET", "/flood"), Timer(LOGS)).read_prefix(limit))

    client.get, client.lines, client.trickle, client.flood_prefix = get, lines, trickle, flood
    return client


def http_client(port: int) -> Client:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    client = Client()

    def get(path: str) -> bytes:
        conn.request("GET", path)
        return conn.getresponse().read()

    def lines(path: str) -> Iterator[bytes]:
        conn.request("GET", path)
        response = conn.getresponse()
        yield from (line.rstrip(b"\r\n") for line in iter(response.readline, b""))

    def trickle(timeout: float) -> None:
        other = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        other.request("GET", "/trickle")
        other.getresponse().read()

    def flood(limit: int) -> int:
        other = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        other.request("GET", "/flood")
        size = len(other.getresponse().read(limit))
        other.close()
        return size

    client.get, client.lines, client.trickle, client.flood_prefix = get, lines, trickle, flood
    return client


def httpx_like(module: Any, port: int) -> Client:
    http = module.Client(base_url=f"http://127.0.0.1:{port}", timeout=15)
    client = Client()
    client.get = lambda path: http.get(path).content

    def lines(path: str) -> Iterator[bytes]:
        with http.stream("GET", path) as response:
            for line in response.iter_lines():
                yield line.encode()

    def trickle(timeout: float) -> None:
        http.get("/trickle", timeout=timeout)

    def flood(limit: int) -> int:
        size = 0
        with http.stream("GET", "/flood") as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size >= limit:
                    break
        return min(size, limit)

    client.lines, client.trickle, client.flood_prefix = lines, trickle, flood
    return client


def make_client(stack: str, port: int) -> Client:
    if stack == "krmfn.net":
        return krmfn_net(port)
    if stack == "http.client":
        return http_client(port)
    return httpx_like(__import__(stack), port)


def worker(stack: str, port: int, requests: int, lines: int, rounds: int) -> None:
    """Prints one JSON line of figures for ``stack``."""
    started = time.perf_counter()
    module = {"krmfn.net": "krmfn.net.wire", "http.client": "http.client"}.get(stack, stack)
    __import__(module)
    imported = time.perf_counter() - started
    client = make_client(stack, port)
    client.get("/object")  # the connection, once
    per_request = []
    for _ in range(rounds):
        cpu = time.process_time()
        for _ in range(requests):
            json.loads(client.get("/object"))
        per_request.append((time.process_time() - cpu) / requests)
    per_line = []
    for _ in range(rounds):
        cpu = time.process_time()
        count = sum(1 for line in client.lines(f"/watch?n={lines}") if json.loads(line))
        per_line.append((time.process_time() - cpu) / count)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    read = client.flood_prefix(4 << 20)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(json.dumps({"import": imported, "request": statistics.median(per_request),
                      "line": statistics.median(per_line), "rss": rss,
                      "flood": read, "flood_rss": grown}), flush=True)  # fmt: skip


def trickle_in_thread(stack: str, port: int) -> str:
    """Whether a stack ends the trickled request by itself within 4 s; run in a child we can abandon."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(Path(__file__).parent)!r}); import http_stacks as b;"
        f"c = b.make_client({stack!r}, {port}); t = time.perf_counter()\n"
        "try:\n    c.trickle(1.0); print('answered')\n"
        "except Exception as e:\n    print(f'{time.perf_counter() - t:.2f} s ({type(e).__name__})')"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=4, check=False
        )
    except subprocess.TimeoutExpired:
        return "no: still reading after 4 s"
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.quick:
        args.requests, args.lines, args.rounds = 200, 1000, 1
    if args.worker:
        worker(args.worker, args.port, args.requests, args.lines, args.rounds)
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        rows = []
        for stack in STACKS:
            try:
                __import__(stack.split(".")[0] if stack != "krmfn.net" else "krmfn.net")
            except ImportError:
                sys.exit(f"bench/http_stacks.py compares {stack}, which is not installed: {INSTALL[stack]}")
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", stack, "--port", str(port), "--requests",
                 str(args.requests), "--lines", str(args.lines), "--rounds", str(args.rounds)],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                sys.exit(f"{stack}: {proc.stderr}")
            found = json.loads(proc.stdout.strip().splitlines()[-1])
            deadline = trickle_in_thread(stack, port)
            rows.append([
                f"`{stack}`", f"{found['request'] * 1e3:.3f}", f"{found['line'] * 1e6:.1f}",
                f"{found['import'] * 1e3:.0f}", f"{found['rss']:.0f}", deadline,
                f"{found['flood'] >> 20} MiB, +{found['flood_rss']:.0f} MB",
            ])  # fmt: skip
        table(
            f"HTTP stacks on loopback: {args.requests:,} GETs x {args.rounds} rounds, {args.lines:,} watch "
            "lines (median CPU)",
            ["stack", "CPU ms / request", "CPU µs / watch line", "import ms", "peak RSS MB",
             "1 s timeout vs 1 byte / 0.2 s", "read 4 MiB of an endless answer"],
            rows,
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
