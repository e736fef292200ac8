"""A reader keeps the heap it freed for its next span while it is small, and hands it back
to the OS once it holds more than `build.KEEP_RESIDENT_BYTES` (loading/build.py)."""
import json
import os
import subprocess
import sys

import psutil
import pytest

from tb_plugin.loading import build

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# 128 MiB freed in glibc's heap under a chunk that stays allocated (so the heap's top does
# not shrink by itself): only a trim returns it.
_FREED_HEAP = """
import ctypes, json
from tb_plugin.loading import build

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
chunk = 64 << 10
chunks = [libc.malloc(chunk) for _ in range(2048)]
for p in chunks:
    ctypes.memset(p, 1, chunk)
pin = libc.malloc(chunk)
for p in chunks:
    libc.free(p)
held = build.resident_bytes()
build.KEEP_RESIDENT_BYTES = held + (64 << 20)
build.give_memory_back()
kept = build.resident_bytes()
build.KEEP_RESIDENT_BYTES = kept - 1
build.give_memory_back()
print(json.dumps([held, kept, build.resident_bytes()]))
"""


def test_resident_bytes_is_the_process_rss():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc here")
    ours, theirs = build.resident_bytes(), psutil.Process().memory_info().rss
    assert abs(ours - theirs) < 16 << 20


def test_freed_heap_is_kept_below_the_bound_and_handed_back_above_it():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's heap")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    held, kept, given = json.loads(out.strip().splitlines()[-1])
    assert kept > held - (16 << 20)  # below the bound: the freed 128 MiB stay for reuse
    assert given < kept - (96 << 20)  # above it: handed back
