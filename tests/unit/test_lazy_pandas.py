"""TensorBoard's process imports pandas only when a view computes something (lazy.py): not
at its start, and not for the first answers of the views, which come from the files the
readers stored (JSON sent as written, table pages cut in Arrow). Each check runs in a fresh
interpreter, the way TensorBoard's process starts."""
import json
import os
import shutil
import subprocess
import sys

from tb_plugin import discovery
from tb_plugin.cache import ProfileCache, entry_key
from tb_plugin.loading import build_entry
from tests.tb_server import FIXTURES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_plugin_starts_without_pandas_and_pd_is_pandas_once_used():
    out = _run(
        "import sys, tb_plugin.plugin as p, tb_plugin.loading.loader\n"
        "p.routes()\n"
        "before = 'pandas' in sys.modules\n"
        "from tb_plugin.lazy import pd\n"
        "frame = pd.DataFrame({'a': [1]})\n"
        "import pandas\n"
        "print(before, pd.DataFrame is pandas.DataFrame, isinstance(frame, pandas.DataFrame),"
        " pd.api.types.is_integer_dtype(frame['a']))\n")
    assert out == "False True True True"


_FIRST_ANSWERS = r"""
import json, sys, time
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request
from tb_plugin import plugin
from tb_plugin.cache import ProfileCache
from tb_plugin.loading import Loader

logdir, cache_dir = sys.argv[1], sys.argv[2]
loader = Loader(logdir, cache=ProfileCache(cache_dir), max_workers=1)
loader.scan()
deadline = time.time() + 120
while any(loader.run_status(r.name)["state"] == "loading" for r in loader.runs()):
    assert time.time() < deadline, "views not ready"
    time.sleep(0.05)
routes = plugin.routes()

def get(route, **args):
    resp = routes[route](Request(EnvironBuilder(query_string=args).get_environ()), loader)
    assert resp.status_code == 200, (route, args, resp.get_data()[:300])
    return json.loads(resp.get_data())

answers = {"runs": len(get("/runs")["runs"])}
for r in loader.runs():
    info = get("/run", run=r.name)
    for w in info["workers"]:
        for s in w["spans"]:
            span = dict(run=r.name, worker=w["name"], span=s)
            answers.setdefault("steps", []).append(len(get("/steps", **span)["steps"]))
            answers.setdefault("summary", []).append(bool(get("/summary", **span)))
            answers.setdefault("kernels", []).append(len(get("/kernels", limit=50, **span)["rows"]))
            answers.setdefault("kernels_by_calls", []).append(
                len(get("/kernels", limit=5, offset=1, sort="-calls", **span)["rows"]))
            answers.setdefault("operators", []).append(
                len(get("/operators", limit=50, **span)["rows"]))
            answers.setdefault("memory", []).append(bool(get("/memory", **span)))
first = "pandas" in sys.modules
# A search needs the frame: pandas is imported then, and the answer is the same kind.
s0 = dict(run=r.name, worker=info["workers"][0]["name"], span=info["workers"][0]["spans"][0])
searched = get("/kernels", limit=50, search="a", **s0)
loader.stop(terminate_readers=True)
print(json.dumps({"pandas_for_first_answers": first, "pandas_after_search": "pandas" in sys.modules,
                  "searched_rows": len(searched["rows"]), "answers": answers}))
"""


def test_the_first_answers_of_the_views_need_no_pandas(tmp_path):
    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_dist4"), logdir / "dist4")
    cache = ProfileCache(str(tmp_path / "cache"))
    runs, _ = discovery.discover(str(logdir))
    spans = [s for r in runs.values() for s in r.spans()]
    assert len(spans) == 4
    for span in spans:  # the views stage, as a reader makes it
        build_entry(span, cache.root, entry_key(span.producer, span.root, span.device_id,
                                                discovery.fingerprint(span)))
    out = json.loads(_run(_FIRST_ANSWERS.replace("sys.argv[1], sys.argv[2]",
                                                 f"{str(logdir)!r}, {cache.root!r}")))
    answers = out["answers"]
    # Every span answered every first request with data (the fixture's four ranks all have
    # steps, kernels, operators and memory records).
    assert answers["runs"] == 1
    assert all(n > 0 for n in answers["steps"] + answers["kernels"] + answers["operators"])
    assert all(answers["summary"]) and all(answers["memory"]) and len(answers["memory"]) == 4
    assert all(0 < n <= 5 for n in answers["kernels_by_calls"])
    assert out["pandas_for_first_answers"] is False
    assert out["pandas_after_search"] is True and out["searched_rows"] > 0
