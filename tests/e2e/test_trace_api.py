"""Trace timeline routes on a real TensorBoard over every fixture profile."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.tb_server import FIXTURES, TensorBoard, get_json


@pytest.fixture(scope="module")
def tb():
    with TensorBoard(FIXTURES).loaded() as t:
        yield t


def _get(tb, route, **params):
    q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    url = f"{tb.api}/{route}?{q}"
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:
                body = resp.read()
                return resp.status, json.loads(body), len(body)
        except urllib.error.HTTPError as err:
            body = err.read()
            if err.code == 503 and time.time() < deadline:
                time.sleep(0.5)
                continue
            return err.code, json.loads(body), len(body)


def _profiles(tb):
    out = []
    for r in get_json(f"{tb.api}/runs")["runs"]:
        if r["state"] != "ready":
            continue
        info = get_json(f"{tb.api}/run?" + urllib.parse.urlencode({"run": r["name"]}))
        if "trace" not in info["views"]:
            continue
        for w in info["workers"]:
            for s in w["spans"]:
                out.append({"run": r["name"], "worker": w["name"], "span": s})
    return out


def test_every_trace_route_on_every_profile(tb):
    profiles = _profiles(tb)
    assert len(profiles) >= 10
    producers_seen = set()
    for p in profiles:
        st, tracks, _ = _get(tb, "trace/tracks", **p)
        assert st == 200, (p, tracks)
        assert tracks["tracks"] and tracks["end_us"] >= tracks["start_us"]
        assert [t["sort"] for t in tracks["tracks"]] == list(range(len(tracks["tracks"])))
        ids = {t["id"] for t in tracks["tracks"]}
        total_slices = sum(t["slices"] for t in tracks["tracks"])
        s0, s1 = tracks["start_us"], tracks["end_us"] + 1
        st, vp, size = _get(tb, "trace/viewport", start_us=s0, end_us=s1, width_px=1200, **p)
        assert st == 200, vp
        assert size <= 1 << 20
        n_real = sum(len(ln["slices"]) for ln in vp["lanes"])
        n_merged = sum(b[2] for ln in vp["lanes"] for b in ln["blocks"])
        assert n_real + n_merged <= total_slices
        assert all(ln["track"] in ids for ln in vp["lanes"])
        # Every slice drawn is at least ~1 px wide; every block names a known name.
        px = vp["px_us"]
        for ln in vp["lanes"]:
            for sid, rel, dur, name in ln["slices"]:
                assert dur >= px * 0.999 and 0 <= name < len(vp["names"])
            for b in ln["blocks"]:
                assert b[2] >= 1 and 0 <= b[4] < len(vp["names"])
        # A slice's details, with its flows resolved to slices.
        some = next((ln["slices"][0] for ln in vp["lanes"] if ln["slices"]), None)
        if some:
            st, d, _ = _get(tb, "trace/slice", id=some[0], **p)
            assert st == 200 and d["id"] == some[0] and d["name"] == vp["names"][some[3]]
            assert isinstance(d["args"], dict) and isinstance(d["flows"], list)
            name = d["name"]
            st, hits, _ = _get(tb, "trace/search", q=name[:6], **p)
            assert st == 200 and hits["total"] >= 1
            assert all(name[:6].lower() in h["name"].lower() for h in hits["hits"])
        st, c, _ = _get(tb, "trace/counters", start_us=s0, end_us=s1, width_px=300, **p)
        assert st == 200 and isinstance(c["series"], list)
        st, m, _ = _get(tb, "trace/summary", start_us=s0, end_us=s1, **p)
        assert st == 200 and m["slices"] >= 0
        producers_seen.add(p["run"])
    assert {"kineto_gpu", "real/mindinsight_msprof_cann63", "mindspore_2x",
            "torch_npu_level1"} <= producers_seen


def test_flows_link_host_op_to_device_kernel(tb):
    p = next(x for x in _profiles(tb) if x["run"] == "torch_npu_level1")
    st, hits, _ = _get(tb, "trace/search", q="aclnnRmsNorm", **p)
    assert st == 200 and hits["total"] > 0
    _, tracks, _ = _get(tb, "trace/tracks", **p)
    kinds = {t["id"]: t["kind"] for t in tracks["tracks"]}
    linked = []
    for h in hits["hits"][:20]:
        _, d, _ = _get(tb, "trace/slice", id=h["id"], **p)
        linked += [(kinds[h["track"]], kinds[f["track"]], f["flow"]) for f in d["flows"]]
    assert any(a == "host" and b == "device" for a, b, _ in linked) or \
        any(b == "host" for a, b, _ in linked), linked


def test_kineto_ac2g_links_launch_to_kernel(tb):
    p = next(x for x in _profiles(tb) if x["run"] == "kineto_gpu")
    st, hits, _ = _get(tb, "trace/search", q="cudaLaunchKernel", **p)
    assert st == 200 and hits["total"] > 0
    _, d, _ = _get(tb, "trace/slice", id=hits["hits"][0]["id"], **p)
    assert any(f["direction"] == "out" for f in d["flows"]), d["flows"]


def test_viewport_is_bounded_when_zoomed_in_and_out(tb):
    p = next(x for x in _profiles(tb) if x["run"] == "real/kineto_resnet50_w0")
    _, tracks, _ = _get(tb, "trace/tracks", **p)
    s0, s1 = tracks["start_us"], tracks["end_us"]
    for width in (1, 50, 3000):
        for frac in (1.0, 0.01, 0.0001):
            a = s0 + (s1 - s0) * 0.3
            st, vp, size = _get(tb, "trace/viewport", start_us=a, end_us=a + (s1 - s0) * frac,
                                width_px=width, **p)
            assert st == 200 and size <= 1 << 20
            items = sum(len(ln["slices"]) + len(ln["blocks"]) for ln in vp["lanes"])
            assert items <= 20000
            for ln in vp["lanes"]:  # a few items per pixel per lane
                assert len(ln["slices"]) + len(ln["blocks"]) <= 4 * width + 8


@pytest.mark.parametrize("params,status", [
    ({}, 400),
    ({"start_us": "x", "end_us": 5, "width_px": 10}, 400),
    ({"start_us": 5, "end_us": 1, "width_px": 10}, 400),
    ({"start_us": 1, "end_us": 5, "width_px": 0}, 400),
    ({"start_us": 1, "end_us": 5, "width_px": 100000}, 400),
    ({"start_us": 1, "end_us": 5, "width_px": 10, "tracks": "a,b"}, 400),
])
def test_viewport_rejects_bad_parameters(tb, params, status):
    p = next(x for x in _profiles(tb) if x["run"] == "kineto_gpu")
    st, body, _ = _get(tb, "trace/viewport", **p, **params)
    assert st == status and "error" in body


def test_other_routes_reject_bad_parameters(tb):
    p = next(x for x in _profiles(tb) if x["run"] == "kineto_gpu")
    assert _get(tb, "trace/slice", **p)[0] == 400
    assert _get(tb, "trace/slice", id=-1, **p)[0] == 400
    assert _get(tb, "trace/slice", id=10 ** 9, **p)[0] == 404
    assert _get(tb, "trace/search", **p)[0] == 400
    assert _get(tb, "trace/search", q="(", regex=1, **p)[0] == 400
    assert _get(tb, "trace/search", q="a", limit=0, **p)[0] == 400
    assert _get(tb, "trace/tracks", run="nope")[0] == 404
