"""The TensorBoard plugin: wiring only (routes, activity, frontend metadata).

This module imports nothing heavy (no pandas): TensorBoard imports it at its start, and the
plugin starts its first reader process (which imports for ~1 s on another core) before it
imports the rest of itself, in the constructor. The route table is built on first use.
"""
from __future__ import annotations

import functools
import logging
import mimetypes
import os
import posixpath

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


class NpuProfilerPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext):
        # A local path or any fsspec URL (s3://, gs://, hdfs://, az://, ...): TensorBoard
        # hands --logdir over as given, and the loader's storage layer (storage.py) lists
        # and mirrors a URL, so TensorBoard's own reading of it (its other plugins) is
        # independent of ours: a failure there never reaches this plugin, nor ours it.
        self.logdir = os.environ.get(LOGDIR_ENV) or context.logdir or ""
        # The first reader starts now, importing on another core while this process
        # imports the loader and the routes (~0.8 s) and TensorBoard finishes starting.
        readers = dask_pool.start_pool(warm=bool(self.logdir))
        from .http.memo import ResponseMemo
        from .loading.loader import Loader

        self.loader = Loader(self.logdir, readers=readers)
        self.loader.start()
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
