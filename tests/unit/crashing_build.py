"""A build function for loader tests: the reader process dies on spans named 'crash'."""
import os

from tb_plugin.loading import build_entry


def build_or_die(span, cache_root, key):
    if "crash" in os.path.basename(span.root):
        os._exit(13)
    return build_entry(span, cache_root, key)


def die_once(marker: str) -> str:
    """Kills its process the first time (leaving `marker`), succeeds when run again."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(13)
    return "second try"


def die_always() -> None:
    os._exit(13)


def square(n: int) -> int:
    return n * n


def pid_then_sleep(path: str, seconds: float) -> None:
    """Writes its process id to `path`, then sleeps (a reader busy with a long span)."""
    import time

    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(seconds)


def pid_of(n: int) -> tuple[int, int]:
    """(n, the id of the process that ran it)."""
    return n, os.getpid()


def freeze_count_in_reader() -> int:
    """How many objects the reader process keeps out of the collector once prepared."""
    import gc

    from tb_plugin.loading import build

    build.prepare_reader_process()
    return gc.get_freeze_count()


def views_fail_slowly(span, cache_root, key):
    """A views stage that fails after a while (its span's early trace is decoded meanwhile)."""
    import time

    time.sleep(2.0)
    raise RuntimeError("views failed on purpose")


def reader_state(module: str, env_name: str, caller: int) -> dict:
    """Run in a reader: whether `module` was imported before this task, the objects frozen
    out of the collector's view, an environment variable, and whether the `caller` process
    started this one itself."""
    import gc
    import sys

    import pyarrow as pa

    return {"imported": module in sys.modules, "frozen": gc.get_freeze_count(),
            "collecting": gc.isenabled(), "arrow_pool": pa.default_memory_pool().backend_name,
            "env": os.environ.get(env_name), "parent_is_caller": os.getppid() == caller}


def openblas_threads() -> int | None:
    """Run in a reader: the threads OpenBLAS (loaded by NumPy) would use, asked of the
    library itself; None when NumPy has no OpenBLAS."""
    import ctypes

    import numpy  # noqa: F401  (loads its BLAS)

    with open("/proc/self/maps") as fh:
        libs = sorted({line.split()[-1] for line in fh if "openblas" in line.lower()})
    for path in libs:
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                       "openblas_get_num_threads"):
            if hasattr(lib, symbol):
                return int(getattr(lib, symbol)())
    return None
