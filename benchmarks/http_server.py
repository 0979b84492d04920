"""One warm HTTP server for every client against a stdio server per client, model on.

    .venv/bin/python benchmarks/http_server.py [--revisions 100000] [--seconds 60]
        [--clients 5] [--concurrent 8]

On ``--revisions`` revisions (synthetic vectors stored under e5's key, as in
api_load.py; each query is encoded by the real model):

- memory: the resident memory (VmRSS) summed over every process serving 5 clients, each
  of which has searched once: one ``memory serve --http`` (its supervisor and its
  server) against 5 ``memory serve`` on stdio (each a relay and a worker);
- first answer: a new client's time from connecting to its first search result, on the
  warm HTTP server (initialize, then tools/call; 20 clients, each with a question not
  asked before, and that first search alone), against spawning a stdio server (10);
- concurrency: 8 clients searching at once for ``--seconds``, each with its own session
  and token, against one client alone: throughput and p50/p95 of a search. Twice:
  closed loop (each client sends its next search as soon as it has the answer: the
  server's capacity) and paced (each client searches once a second, as assistants do).

The clients speak JSON-RPC over plain HTTP (httpx2), so that the client side costs
little of the machine's two cores. Saves JSON to benchmarks/results/http_server.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from api_load import build, plain_env  # noqa: E402
from changes import ms  # noqa: E402
from corpus import Corpus  # noqa: E402

from personal_memory.times import format_time  # noqa: E402

MEMORY = [sys.executable, "-m", "personal_memory"]
ACCEPT = "application/json, text/event-stream"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def tree(pid: int) -> list[int]:
    """A process and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        todo += [int(k) for k in kids]
    return out


def memory_env() -> dict:
    return plain_env(MEMORY_EMBEDDER="e5")


class HttpServer:
    def __init__(self, db: Path, folder: Path):
        self.log = folder / "http.log"
        # No rate limit in the way: a closed loop asks more than an assistant does.
        self.proc = subprocess.Popen(MEMORY + ["--db", str(db), "serve", "--http", "--port",
                                               "0", "--rate-limit", "1000000"], stderr=open(self.log, "w"),
                                     stdout=subprocess.DEVNULL, env=memory_env())
        deadline = time.monotonic() + 120
        while not (found := re.search(r"serving MCP at (\S+)", self.log.read_text())):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(self.log.read_text())
            time.sleep(0.1)
        self.url = found.group(1)
        while "search index ready" not in self.log.read_text():
            time.sleep(0.1)
        self.db = db

    def token(self, name: str) -> str:
        out = subprocess.run(MEMORY + ["--db", str(self.db), "tokens", "add", name],
                             capture_output=True, text=True, env=memory_env(), check=True)
        return out.stdout.splitlines()[0]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def _result(response: httpx2.Response) -> dict:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


class Session:
    """A client over plain HTTP: initialize once, then tools/call."""

    def __init__(self, web: httpx2.AsyncClient, url: str, token: str):
        self.web, self.url = web, url
        self.headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        self.n = 0

    async def post(self, method: str, params: dict | None = None, notify=False):
        body = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.n += 1
            body["id"] = self.n
        r = await self.web.post(self.url, json=body, headers=self.headers)
        r.raise_for_status()
        if method == "initialize":
            self.headers["mcp-session-id"] = r.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = INIT["protocolVersion"]
        return None if notify else _result(r)

    async def open(self) -> None:
        await self.post("initialize", INIT)
        await self.post("notifications/initialized", notify=True)

    async def search(self, q: dict) -> dict:
        found = await self.post("tools/call", {"name": "memory_search", "arguments": q})
        assert not found["result"].get("isError"), found
        return found


def stdio_first_answer(db: Path, q: dict) -> tuple[float, subprocess.Popen]:
    """Spawn a stdio server, initialize, search; seconds to the answer."""
    t = time.perf_counter()
    p = subprocess.Popen(MEMORY + ["--db", str(db), "serve"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=memory_env())
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "memory_search", "arguments": q}}):
        p.stdin.write(json.dumps(msg) + "\n")
        p.stdin.flush()
    while True:
        line = json.loads(p.stdout.readline())
        if line.get("id") == 2:
            assert not line["result"].get("isError"), line
            return time.perf_counter() - t, p


def close_stdio(p: subprocess.Popen) -> None:
    p.stdin.close()
    p.wait(timeout=30)


async def http_first_answer(url: str, token: str, q: dict) -> tuple[float, float]:
    """(seconds from connecting to the first answer, seconds of that first search)."""
    async with httpx2.AsyncClient(timeout=60) as web:
        t = time.perf_counter()
        s = Session(web, url, token)
        await s.open()
        opened = time.perf_counter()
        await s.search(q)
        return time.perf_counter() - t, time.perf_counter() - opened


async def load(url: str, tokens: list[str], queries: list[dict], seconds: float,
               every: float | None) -> dict:
    """Clients searching at once for ``seconds``: back to back, or one search ``every``
    seconds each (staggered)."""
    times: list[float] = []
    end = time.monotonic() + seconds

    async def client(k: int, token: str) -> None:
        async with httpx2.AsyncClient(timeout=120) as web:
            s = Session(web, url, token)
            await s.open()
            i = k
            if every:
                await asyncio.sleep(every * k / len(tokens))
            while time.monotonic() < end:
                t = time.perf_counter()
                await s.search(queries[i % len(queries)])
                took = time.perf_counter() - t
                times.append(took)
                i += len(tokens)
                if every:
                    await asyncio.sleep(max(0.0, every - took))
    t0 = time.monotonic()
    await asyncio.gather(*(client(k, tok) for k, tok in enumerate(tokens)))
    wall = time.monotonic() - t0
    return {"clients": len(tokens), "searches": len(times),
            "per_second": round(len(times) / wall, 1), **ms(times)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revisions", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "http_server.json")
    opts = ap.parse_args()
    corpus = Corpus(seed=3)
    queries = [{"query": q["query"], "as_of": format_time(q["as_of"])} if q.get("as_of")
               else {"query": q["query"]} for q in corpus.queries(400)]
    result: dict = {"revisions": opts.revisions, "machine": {"cores": os.cpu_count()},
                    "model": "e5 (multilingual-e5-small) on every server"}
    with tempfile.TemporaryDirectory(prefix="pm-http-") as tmp:
        folder = Path(tmp)
        db = folder / "m.db"
        t = time.perf_counter()
        build(db, opts.revisions, corpus)
        result["build_seconds"] = round(time.perf_counter() - t, 1)
        print("built", result["build_seconds"], flush=True)

        # Memory: 5 stdio servers, each after one search.
        spawned = [stdio_first_answer(db, queries[k]) for k in range(opts.clients)]
        stdio_kib = sum(rss_kib(p) for _, proc in spawned for p in tree(proc.pid))
        stdio_first = [s for s, _ in spawned]
        for _, proc in spawned:
            close_stdio(proc)
        spawned = [stdio_first_answer(db, queries[k]) for k in range(10 - opts.clients)]
        stdio_first += [s for s, _ in spawned]
        for _, proc in spawned:
            close_stdio(proc)

        server = HttpServer(db, folder)
        try:
            tokens = [server.token(f"client-{k}")
                      for k in range(max(20, opts.clients, opts.concurrent))]

            async def five() -> tuple[int, list[float]]:
                firsts = [await http_first_answer(server.url, tokens[k], queries[k])
                          for k in range(20)]
                async with httpx2.AsyncClient(timeout=60) as web:
                    sessions = [Session(web, server.url, tok) for tok in tokens[:opts.clients]]
                    for k, s in enumerate(sessions):
                        await s.open()
                        await s.search(queries[k])
                    kib = sum(rss_kib(p) for p in tree(server.proc.pid))
                return kib, firsts
            http_kib, http_first = asyncio.run(five())
            result["memory"] = {
                "clients": opts.clients, "http_server_mib": round(http_kib / 1024, 1),
                "stdio_servers_mib": round(stdio_kib / 1024, 1),
                "http_over_stdio": round(http_kib / stdio_kib, 3)}
            result["first_answer"] = {
                "http_connected_client_ms": ms([a for a, _ in http_first]),
                "http_first_search_after_initialize_ms": ms([b for _, b in http_first]),
                "stdio_spawned_server_ms": ms(stdio_first)}
            print(json.dumps(result["memory"]), json.dumps(result["first_answer"]),
                  flush=True)
            for label, every in (("closed_loop", None), ("paced_1s", 1.0)):
                alone = asyncio.run(load(server.url, tokens[:1], queries, opts.seconds,
                                         every))
                many = asyncio.run(load(server.url, tokens[:opts.concurrent], queries,
                                        opts.seconds, every))
                result[label] = {"one_client": alone, "concurrent": many,
                                 "p95_ratio": round(many["p95_ms"] / alone["p95_ms"], 2),
                                 "throughput_ratio": round(many["per_second"]
                                                           / alone["per_second"], 2)}
                print(label, json.dumps(result[label]), flush=True)
        finally:
            server.stop()
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
