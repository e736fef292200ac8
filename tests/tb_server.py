"""Start a real `tensorboard` process for end-to-end and browser tests."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from tests.process_group import log_tail, stop_group

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
# Real profiler output (unchanged public samples, see fixtures/real/README.md).
REAL_DATA = os.path.join(FIXTURES, "real")
PLUGIN = "npu_profiler"


def generate_large(out: str, trace_mb: int) -> str:
    """A generated torch_npu logdir of one span with a `trace_mb` trace (fixtures/generate.py
    --large): at 200 MB its timeline takes a reader seconds on two cores."""
    subprocess.run([sys.executable, os.path.join(FIXTURES, "generate.py"), "--large",
                    "--trace-mb", str(trace_mb), "--out", out], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tensorboard_bin() -> str:
    cand = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    return cand if os.path.exists(cand) else shutil.which("tensorboard") or "tensorboard"


def get_json(url: str, timeout: float = 30):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8"))


class TensorBoard:
    def __init__(self, logdir: str, cache_dir: str | None = None, path_prefix: str = "",
                 extra_env: dict | None = None):
        self.logdir = logdir
        self.port = free_port()
        self.path_prefix = path_prefix
        self._own_cache = cache_dir is None
        self.cache_dir = cache_dir or tempfile.mkdtemp(prefix="npu-prof-cache-")
        self.log_path = tempfile.mktemp(prefix="tb-", suffix=".log")
        self.base = f"http://127.0.0.1:{self.port}{path_prefix}"
        self.api = f"{self.base}/data/plugin/{PLUGIN}"
        self.env = dict(os.environ, NPU_PROFILER_CACHE_DIR=self.cache_dir,
                        NPU_PROFILER_POLL_SECONDS="2")
        if extra_env:
            self.env.update(extra_env)
        self.proc = None

    def start(self, timeout: float = 120) -> "TensorBoard":
        args = [tensorboard_bin(), "--logdir", self.logdir, "--host", "127.0.0.1",
                "--port", str(self.port)]
        if self.path_prefix:
            args += ["--path_prefix", self.path_prefix]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tensorboard exited: {self.log()}")
            try:
                get_json(f"{self.api}/runs", timeout=5)
                return self
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                time.sleep(0.3)
        raise RuntimeError(f"tensorboard did not answer in {timeout}s: {self.log()}")

    @contextlib.contextmanager
    def loaded(self, timeout: float = 300):
        """Started and every run loaded for the `with` block; stopped after it, also when it
        never answered or never finished loading."""
        try:
            self.start()
            self.wait_loaded(timeout)
            yield self
        finally:
            self.stop()

    def wait_loaded(self, timeout: float = 300) -> dict:
        deadline = time.time() + timeout
        data = {}
        while time.time() < deadline:
            data = get_json(f"{self.api}/runs")
            if data.get("scanned") and all(r["state"] != "loading" and
                                           r.get("trace_state") != "loading"
                                           for r in data["runs"]):
                return data
            time.sleep(0.3)
        raise RuntimeError(f"runs still loading after {timeout}s: {data}")

    def get(self, route: str, **params):
        """JSON of a plugin route (raises urllib.error.HTTPError on an error status)."""
        return get_json(f"{self.api}/{route}?{urllib.parse.urlencode(params)}")

    def status(self, route: str, **params) -> tuple[int, dict]:
        """(HTTP status, JSON body) of a plugin route, errors included."""
        try:
            with urllib.request.urlopen(f"{self.api}/{route}?{urllib.parse.urlencode(params)}",
                                        timeout=60) as r:
                return r.status, json.loads(r.read().decode())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read().decode())

    def log(self) -> str:
        return log_tail(self.log_path, 5000)

    def stop(self) -> None:
        stop_group(self.proc)
        if getattr(self, "_log", None):
            self._log.close()
        if self._own_cache:
            shutil.rmtree(self.cache_dir, ignore_errors=True)
