"""The TensorBoard plugin: wiring only (routes, activity, frontend metadata), and its
loader (`NpuProfilerLoader`, the entry point TensorBoard loads).

This module imports nothing heavy (no pandas): TensorBoard imports it at its start. Loading
starts as soon as TensorBoard has parsed its flags (`NpuProfilerLoader.fix_flags`), not
when TensorBoard constructs the plugin: in between, TensorBoard starts its data server and
waits for it, 0.01 s or, when the server is not up by then, 0.5 s more
(tensorboard/data/server_ingester.py polls at those times). Meanwhile the first reader
process starts and imports on another core, and a thread of TensorBoard's imports the rest
of this package and makes the Loader, which scans and sends spans to the readers. The
route table is built on first use.
"""
from __future__ import annotations

import functools
import logging
import mimetypes
import os
import posixpath
import threading

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .loading import dask_pool

log = logging.getLogger(__name__)

PLUGIN_NAME = "npu_profiler"
# The plugin's own logdir, instead of TensorBoard's --logdir (e.g. an s3:// URL while
# TensorBoard's other plugins read a local directory). README "Remote logdirs".
LOGDIR_ENV = "NPU_PROFILER_LOGDIR"
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


@functools.cache
def routes() -> dict:
    """Route -> handler(request, loader): the run listing, then the route table of every
    module in the view registry (http/views.py). Documented in docs/http_api.md."""
    from .http import api_runs, views

    table = {**api_runs.ROUTES}
    for module in views.route_modules():
        table.update(module.ROUTES)
    return table


def __getattr__(name: str):
    if name == "ROUTES":  # the route table, as a module attribute
        return routes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Read-only: a HEAD is answered like a GET without the body (werkzeug drops it).
ALLOWED_METHODS = ("GET", "HEAD")


def _error(status: int, message: str):
    from .http.responses import ApiError, error_response

    return error_response(ApiError(status, message))


def _method_not_allowed():
    resp = _error(405, "only GET and HEAD are supported")
    resp.headers["Allow"] = ", ".join(ALLOWED_METHODS)
    return resp


def plugin_logdir(tensorboard_logdir: str | None) -> str:
    """The logdir this plugin reads: $NPU_PROFILER_LOGDIR, else TensorBoard's --logdir.

    A local path or any fsspec URL (s3://, gs://, hdfs://, az://, ...): TensorBoard hands
    --logdir over as given, and the loader's storage layer (storage.py) lists and mirrors
    a URL, so TensorBoard's own reading of it (its other plugins) is independent of ours:
    a failure there never reaches this plugin, nor ours it."""
    return os.environ.get(LOGDIR_ENV) or tensorboard_logdir or ""


def start_loader(logdir: str):
    """A started Loader of `logdir`: the first reader process is started first (it imports
    for ~0.6 s on another core while this process imports the loader, ~0.7 s), then the
    Loader, whose first scan sends the spans to the readers."""
    readers = dask_pool.start_pool(warm=bool(logdir))
    from .loading.loader import Loader

    loader = Loader(logdir, readers=readers)
    loader.start()
    return loader


class EarlyStart:
    """`start_loader(logdir)` run in a thread, from when TensorBoard has parsed its flags
    until the plugin takes its result (`loader()`)."""

    def __init__(self, logdir: str):
        self.logdir = logdir
        self._loader = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="npu-profiler-early-start",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loader = start_loader(self.logdir)
            routes()  # (the route modules' imports, before the plugin's first request)
        except BaseException as exc:  # raised again where the plugin is made
            self._error = exc

    def loader(self):
        """The started Loader (waits for the thread); raises what starting it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._loader


class NpuProfilerLoader(base_plugin.TBLoader):
    """The plugin's entry point (setup.py): TensorBoard calls `fix_flags` once it has parsed
    the flags of `tensorboard serve` (only then: not for --help), which starts loading
    (`EarlyStart`), and `load` later, when it makes its application."""

    def __init__(self):
        self._early: EarlyStart | None = None

    def fix_flags(self, flags) -> None:
        if getattr(flags, "inspect", False) or getattr(flags, "version_tb", False):
            return  # TensorBoard prints and exits: nothing will be served
        logdir = plugin_logdir(getattr(flags, "logdir", ""))
        if logdir and self._early is None:
            self._early = EarlyStart(logdir)

    def load(self, context: base_plugin.TBContext):
        early, self._early = self._early, None
        return NpuProfilerPlugin(context, early=early)


class NpuProfilerPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext, early: EarlyStart | None = None):
        self.logdir = plugin_logdir(context.logdir)
        # The early start's Loader, waited for here rather than on first use: TensorBoard's
        # own start goes on after this (~0.4 s of CPU, zipping its web files), and in one
        # interpreter it would slow the early start's scan, which sends the readers work.
        loader = early.loader() if early is not None else None
        if loader is not None and early.logdir != self.logdir:  # another logdir: not ours
            loader.stop(terminate_readers=True)
            loader = None
        from .http.memo import ResponseMemo

        self.loader = loader or start_loader(self.logdir)
        self.memo = ResponseMemo()

    def is_active(self) -> bool:
        # Before the first scan has finished, say yes: hiding the tab and showing it a
        # second later is worse than an empty state in the (rare) no-data case.
        if not self.loader.wait_scanned(1.0):
            return True
        return bool(self.loader.runs())

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="NPU Profiler",
                                            disable_reload=True)

    def get_plugin_apps(self):
        apps = {route: self._wrap(handler, route) for route, handler in routes().items()}
        apps["/index.js"] = self._static
        apps["/index.css"] = self._static
        apps["/assets/*"] = self._static
        return apps

    def _wrap(self, handler, route: str):
        from .cache_store import SharedCacheError
        from .http import holding
        from .http.responses import ApiError, error_response

        loader, memo = self.loader, self.memo

        @wrappers.Request.application
        def app(request):
            if request.method not in ALLOWED_METHODS:
                return _method_not_allowed()

            def compute():
                key = memo.key(route, request, loader)
                response = memo.get(key)
                if response is None:
                    response = handler(request, loader)
                    memo.put(key, response)
                return response

            try:
                # A "still loading" answer is held while the request's wait_ms lasts.
                return holding.answer(loader, holding.wait_seconds(request.args), compute)
            except ApiError as err:
                return error_response(err)
            except SharedCacheError as exc:  # a file of the shared cache could not be fetched
                return error_response(ApiError(502, str(exc)))
            except Exception as exc:  # never let a bug take the server down
                log.exception("error in %s", request.path)
                return error_response(ApiError(500, f"internal error: {exc.__class__.__name__}"))

        return app

    @wrappers.Request.application
    def _static(self, request):
        if request.method not in ALLOWED_METHODS:
            return _method_not_allowed()
        # Only files inside static/, by a normalized relative path.
        marker = f"/plugin/{PLUGIN_NAME}/"
        path = request.path
        rel = path[path.index(marker) + len(marker):] if marker in path else path.lstrip("/")
        rel = posixpath.normpath(rel)
        if rel.startswith("..") or rel.startswith("/") or "\\" in rel:
            return _error(404, "not found")
        full = os.path.join(STATIC_DIR, *rel.split("/"))
        if not os.path.isfile(full):
            return _error(404, "not found")
        ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
        if full.endswith(".js"):
            ctype = "text/javascript"
        with open(full, "rb") as fh:
            body = fh.read()
        return wrappers.Response(body, content_type=ctype,
                                 headers={"X-Content-Type-Options": "nosniff",
                                          "Cache-Control": "no-cache"})
