"""Cache entry keys are the same on every machine: a remote logdir's files are keyed by their
URL, not by where this machine's mirror of the logdir lives; and the cache root handed to
reader processes and Dask workers keeps its shared cache URL through pickling."""
from __future__ import annotations

import os
import pickle

from tb_plugin import storage
from tb_plugin.cache import entry_key
from tb_plugin.cache_store import CacheRoot


def _span_in(mirror_root: str, url: str) -> tuple[str, list]:
    """A span's root and fingerprint inside the mirror tree of `url` under `mirror_root`."""
    m = storage.Mirror.create(mirror_root, url)
    root = m.local("run/rank0_ascend_pt")
    os.makedirs(root)
    path = os.path.join(root, "step_trace_time.csv")
    with open(path, "wb") as fh:
        fh.truncate(1234)
    os.utime(path, ns=(1_700_000_000_123_456_789,) * 2)
    st = os.stat(path)
    return root, [(path, st.st_size, st.st_mtime_ns)]


def test_keys_of_a_remote_logdir_do_not_depend_on_the_local_cache_dir(tmp_path):
    url = "s3://bucket/team/logs"
    a = _span_in(str(tmp_path / "machine-a" / "remote"), url)
    b = _span_in(str(tmp_path / "machine-b" / "cache" / "remote"), url)
    assert a[0] != b[0]
    assert entry_key("torch_npu", a[0], None, a[1]) == entry_key("torch_npu", b[0], None, b[1])
    assert storage.source_path(a[0]) == f"{url}/run/rank0_ascend_pt"
    other = _span_in(str(tmp_path / "machine-c"), "s3://bucket/other/logs")
    assert entry_key("torch_npu", a[0], None, a[1]) != \
        entry_key("torch_npu", other[0], None, other[1])


def test_local_paths_are_keyed_by_their_absolute_path(tmp_path):
    d = tmp_path / "logs" / "r"
    d.mkdir(parents=True)
    assert storage.source_path(str(d)) == str(d)
    assert entry_key("kineto", str(d), None, []) != entry_key("kineto", str(tmp_path), None, [])


def test_the_cache_root_keeps_its_shared_url_through_pickling():
    root = CacheRoot("/tmp/cache/v3", "s3://bucket/cache/v3", publish=False)
    back = pickle.loads(pickle.dumps(root))
    assert (str(back), back.url, back.publish) == ("/tmp/cache/v3", "s3://bucket/cache/v3", False)
    assert os.path.join(back, "ab") == "/tmp/cache/v3/ab"
    plain = pickle.loads(pickle.dumps(CacheRoot("/tmp/c/v3")))
    assert plain.url is None and plain.publish is False
