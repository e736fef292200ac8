"""Concurrent clients against a real TensorBoard: every route of every run, measured.

`build_requests` turns `/runs` and `/run` answers into the pool of GET requests the UI makes
(each profile route of each span, tables with sort/search/paging/CSV variants, the trace
routes, the distributed and compare routes), grouped in route classes. `hammer` runs N
client threads for S seconds, each on its own keep-alive connection, picking requests from
the pool at random (so nearly every answer is asked for again: the "cached" answers), and
samples the server's RSS meanwhile. Used by `benchmarks/load_test.py` (50 clients x 60 s,
latency figures) and `tests/load/test_load.py` (short, no latency assertions).
"""
from __future__ import annotations

import dataclasses
import http.client
import json
import random
import threading
import time
import urllib.parse

PLUGIN_PATH = "/data/plugin/npu_profiler"


@dataclasses.dataclass
class Request:
    route_class: str
    path: str  # with the query string, under PLUGIN_PATH


@dataclasses.dataclass
class Result:
    requests: int = 0
    by_class: dict = dataclasses.field(default_factory=dict)   # class -> [latency s]
    statuses: dict = dataclasses.field(default_factory=dict)   # class -> {status: n}
    errors: list = dataclasses.field(default_factory=list)     # (class, path, status, body)
    rss_mb: list = dataclasses.field(default_factory=list)     # (t, rss MB of the tree)
    seconds: float = 0.0

    def count_5xx(self) -> int:
        """Server errors and failed connections; not 503, the documented "still loading"
        answer (with Retry-After) of a profile that is being read."""
        return sum(n for st in self.statuses.values() for s, n in st.items() if _is_error(s))


def _is_error(status: int) -> bool:
    return (status >= 500 and status != 503) or status < 0


def _q(route: str, **params) -> str:
    params = {k: v for k, v in params.items() if v is not None}
    return f"{route}?{urllib.parse.urlencode(params)}" if params else route


def _get_json(conn_factory, path: str):
    c = conn_factory()
    try:
        c.request("GET", PLUGIN_PATH + path)
        r = c.getresponse()
        body = r.read()
        return r.status, (json.loads(body) if body[:1] in (b"{", b"[") else None)
    finally:
        c.close()


def build_requests(host: str, port: int, loading_runs: set[str] = frozenset()) -> list[Request]:
    """Requests for every route of every run currently listed (ready runs fully; runs in
    `loading_runs` get their profile routes too: they answer 503 until ready)."""
    def conn():
        return http.client.HTTPConnection(host, port, timeout=60)

    out = [Request("runs", "/runs")]
    _, runs = _get_json(conn, "/runs")
    spans_by_run = {}
    for r in runs["runs"]:
        name = r["name"]
        out.append(Request("runs", _q("/run", run=name)))
        status, info = _get_json(conn, _q("/run", run=name))
        if status != 200:
            continue
        views = set(info["views"])
        spans = [(w["name"], s) for w in info["workers"] for s in w["spans"]]
        spans_by_run[name] = spans
        cls_prefix = "loading:" if name in loading_runs else ""
        for worker, span in spans[:4]:
            p = dict(run=name, worker=worker, span=span)
            add = lambda c, route, **kw: out.append(  # noqa: E731
                Request(cls_prefix + c, _q(route, **p, **kw)))
            add("overview", "/summary")
            add("overview", "/steps")
            for g in ("name", "type", "core"):
                add("tables", "/kernels", group_by=g)
            add("tables", "/kernels", group_by="name", sort="-calls", limit=50, offset=0)
            add("tables", "/kernels", group_by="name", search="mat", limit=20)
            add("tables", "/kernels", group_by="name", format="csv")
            for g in ("name", "name_shape"):
                add("tables", "/operators", group_by=g)
            add("tables", "/operators", group_by="name", sort="name", limit=100, offset=100)
            add("memory", "/memory")
            add("memory", "/memory", max_points=500)
            add("tables", "/memory/allocations", limit=200)
            if "trace" in views or name in loading_runs:
                _trace_requests(conn, add, p)
        if "distributed" in views:
            out.append(Request("distributed", _q("/distributed", run=name)))
            out.append(Request("distributed", _q("/distributed/comm_ops", run=name)))
            out.append(Request("distributed", _q("/distributed/links", run=name)))
    ready = [(r, s) for r, ss in spans_by_run.items() if r not in loading_runs for s in ss]
    for (r1, (w1, s1)), (r2, (w2, s2)) in zip(ready, ready[1:]):
        p = dict(base_run=r1, base_worker=w1, base_span=s1, exp_run=r2, exp_worker=w2,
                 exp_span=s2)
        out.append(Request("compare", _q("/compare/steps", **p)))
        out.append(Request("compare", _q("/compare/operators", group_by="name", **p)))
        out.append(Request("compare", _q("/compare/kernels", group_by="name", **p)))
    return out


def _trace_requests(conn, add, p: dict) -> None:
    status, tracks = _get_json(conn, _q("/trace/tracks", **p))
    add("trace", "/trace/tracks")
    if status != 200 or not tracks or tracks.get("end_us") is None:
        add("trace", "/trace/viewport", start_us=0, end_us=1, width_px=1600)
        return
    a, b = float(tracks["start_us"]), float(tracks["end_us"])
    span = max(b - a, 1.0)
    add("trace", "/trace/viewport", start_us=a, end_us=b, width_px=1600)
    for k in range(3):  # the windows a user zooms into, each asked again and again
        lo = a + span * k / 4
        add("trace", "/trace/viewport", start_us=lo, end_us=lo + span / 8, width_px=1600)
    add("trace", "/trace/summary", start_us=a, end_us=a + span / 2)
    add("trace", "/trace/counters", start_us=a, end_us=b, width_px=1000)
    add("trace", "/trace/search", q="matmul", limit=50)
    add("trace", "/trace/search", q="step", limit=20)
    status, search = _get_json(conn, _q("/trace/search", **p, q="a", limit=3))
    if status == 200 and search.get("hits"):
        add("trace", "/trace/slice", id=search["hits"][0]["id"])


def _rss_tree_mb(pid: int) -> float:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def hammer(host: str, port: int, requests: list[Request], clients: int, seconds: float,
           server_pid: int | None = None, seed: int = 1,
           refresh: callable = None) -> Result:
    """`clients` threads for `seconds`, each sending random requests from the pool on its
    own keep-alive connection; `refresh()` (if given) may return a new pool every 5 s."""
    result = Result()
    lock = threading.Lock()
    pool = [requests]
    stop = time.time() + seconds

    def client(i: int) -> None:
        rng = random.Random(f"{seed}:{i}")
        conn = None
        local: list[tuple[str, int, float, str, bytes]] = []
        while time.time() < stop:
            req = rng.choice(pool[0])
            t = time.perf_counter()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, port, timeout=120)
                conn.request("GET", PLUGIN_PATH + req.path)
                resp = conn.getresponse()
                body = resp.read()
                status = resp.status
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as exc:
                status, body = -1, repr(exc).encode()
                if conn is not None:
                    conn.close()
                conn = None
            local.append((req.route_class, status, time.perf_counter() - t, req.path,
                          body[:300] if _is_error(status) else b""))
        if conn is not None:
            conn.close()
        with lock:
            for cls, status, dt, path, body in local:
                result.requests += 1
                result.by_class.setdefault(cls, []).append(dt)
                st = result.statuses.setdefault(cls, {})
                st[status] = st.get(status, 0) + 1
                if _is_error(status):
                    result.errors.append((cls, path, status, body.decode("utf-8", "replace")))

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.time()
    for t in threads:
        t.start()
    last_refresh = started
    while any(t.is_alive() for t in threads):
        if server_pid:
            result.rss_mb.append((round(time.time() - started, 1), _rss_tree_mb(server_pid)))
        if refresh is not None and time.time() - last_refresh > 5 and time.time() < stop:
            last_refresh = time.time()
            fresh = refresh()
            if fresh:
                pool[0] = fresh
        time.sleep(0.5)
    for t in threads:
        t.join()
    result.seconds = time.time() - started
    return result


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(q / 100.0 * (len(s) - 1)))))
    return s[k]


def table(result: Result) -> str:
    """Markdown table: per route class count, statuses, p50/p95/p99 in ms."""
    lines = ["| route class | requests | 5xx (not 503) | 503 still loading | other non-2xx |"
             " p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|---|---|---|"]
    for cls in sorted(result.by_class):
        lat = result.by_class[cls]
        st = result.statuses[cls]
        n5 = sum(n for s, n in st.items() if _is_error(s))
        other = ", ".join(f"{s}: {n}" for s, n in sorted(st.items()) if 300 <= s < 500)
        lines.append(f"| {cls} | {len(lat)} | {n5} | {st.get(503, 0)} | {other or '-'} | "
                     f"{percentile(lat, 50) * 1000:.0f} | {percentile(lat, 95) * 1000:.0f} | "
                     f"{percentile(lat, 99) * 1000:.0f} |")
    return "\n".join(lines)
