"""The storage layer's mirror of a remote logdir, on fsspec's in-memory filesystem: objects
are fetched once, fetched again when they change, stubs carry size and identity, listings are
capped and stay inside the URL's prefix, and missing backends are named."""
import gzip
import json
import os

import fsspec
import pytest

from tb_plugin import discovery, storage


@pytest.fixture()
def mem():
    fs = fsspec.filesystem("memory")
    root = "/npu-test-bucket"
    fs.rm(root, recursive=True) if fs.exists(root) else None
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _logdir(tmp_path, url):
    src = storage.open_logdir(url, str(tmp_path / "mirrors"))
    assert isinstance(src, storage.RemoteLogdir)
    return src


def test_stub_then_fetched_once_then_refetched_when_changed(mem, tmp_path):
    fs, root = mem
    body = b"step,time\n" + b"1,2\n" * 50000  # > SMALL_BYTES: a stub until fetched
    fs.pipe(f"{root}/runs/r1/kernel_details.csv", body)
    src = _logdir(tmp_path, f"memory://{root}/runs")
    src.sync(discovery.remote_descend)
    local = os.path.join(src.path, "r1", "kernel_details.csv")
    st = os.stat(local)
    assert st.st_size == len(body)
    assert st.st_blocks * 512 < len(body)  # sparse: nothing downloaded yet
    with open(local, "rb") as fh:
        assert fh.read(4) == b"\0\0\0\0"
    storage.materialize(src.path, [os.path.join(src.path, "r1")])
    with open(local, "rb") as fh:
        assert fh.read() == body
    fetched = os.stat(local)
    assert (fetched.st_size, fetched.st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    # Unchanged object: the next scan and build touch nothing (same inode, no download).
    src.sync(discovery.remote_descend)
    storage.materialize(src.path, [local])
    assert os.stat(local).st_ino == fetched.st_ino

    # Changed object (same size): a new stub with a new fingerprint, then the new bytes.
    changed = body.replace(b"1,2", b"3,4")
    fs.pipe(f"{root}/runs/r1/kernel_details.csv", changed)
    src.sync(discovery.remote_descend)
    restub = os.stat(local)
    assert restub.st_ino != fetched.st_ino
    assert restub.st_mtime_ns != fetched.st_mtime_ns  # the cache key changes
    storage.materialize(src.path, [local])
    with open(local, "rb") as fh:
        assert fh.read() == changed


def test_json_heads_and_small_files_are_there_for_discovery(mem, tmp_path):
    fs, root = mem
    events = [{"ph": "X", "name": f"k{i}", "ts": i, "dur": 1, "pid": 1, "tid": 1}
              for i in range(20000)]
    big = gzip.compress(json.dumps({"traceEvents": events}).encode())
    small = json.dumps({"rank_id": 3}).encode()
    fs.pipe(f"{root}/a/trace.json.gz", big)
    fs.pipe(f"{root}/a/profiler_info_3.json", small)
    src = _logdir(tmp_path, f"memory://{root}")
    src.sync(discovery.remote_descend)
    with open(os.path.join(src.path, "a", "profiler_info_3.json"), "rb") as fh:
        assert fh.read() == small
    with open(os.path.join(src.path, "a", "trace.json.gz"), "rb") as fh:
        head = fh.read(storage.HEAD_BYTES)
    assert head == big[:storage.HEAD_BYTES]
    # The head is enough to see the start of the trace.
    import zlib
    text = zlib.decompressobj(31).decompress(head)[:100]
    assert text.startswith(b'{"traceEvents": [{"ph": "X"')


def test_removed_objects_and_runs_vanish(mem, tmp_path):
    fs, root = mem
    fs.pipe(f"{root}/r1/w.pt.trace.json", b"{}")
    fs.pipe(f"{root}/r2/w.pt.trace.json", b"{}")
    src = _logdir(tmp_path, f"memory://{root}")
    src.sync(discovery.remote_descend)
    assert sorted(discovery.discover(src.path)[0]) == ["r1", "r2"]
    fs.rm(f"{root}/r2", recursive=True)
    src.sync(discovery.remote_descend)
    assert sorted(discovery.discover(src.path)[0]) == ["r1"]
    assert not os.path.exists(os.path.join(src.path, "r2"))


def test_listing_is_capped_and_noted(mem, tmp_path):
    fs, root = mem
    for i in range(30):
        fs.pipe(f"{root}/d/f{i:02d}.csv", b"x")
    listing = storage.list_tree(fs, root, discovery.remote_descend, max_entries=10)
    assert listing.capped
    assert len(listing.files) + len(listing.dirs) == 10
    assert any("stopped after 10 entries" in n for n in listing.notes)
    full = storage.list_tree(fs, root, discovery.remote_descend)
    assert not full.capped and len(full.files) == 30


def test_only_the_prefix_is_listed_and_bad_keys_are_left_out(mem, tmp_path):
    fs, root = mem
    fs.pipe(f"{root}/logs/r1/w.pt.trace.json", b"{}")
    fs.pipe(f"{root}/logs2/secret/w.pt.trace.json", b"{}")  # same stem, other prefix
    fs.pipe(f"{root}/other.pt.trace.json", b"{}")
    src = _logdir(tmp_path, f"memory://{root}/logs")
    notes = src.sync(discovery.remote_descend)
    local = []
    for d, _, files in os.walk(src.path):
        local += [os.path.relpath(os.path.join(d, f), src.path) for f in files]
    assert local == [os.path.join("r1", "w.pt.trace.json")]
    assert notes == []
    # A listing entry with `..` (or one not under the prefix) never reaches the tree.
    entries = [{"name": f"{root}/logs/..", "type": "directory", "size": 0},
               {"name": f"{root}/logs/a\\b.json", "type": "file", "size": 1},
               {"name": f"{root}/logs2/x.json", "type": "file", "size": 1},
               {"name": f"{root}/logs/ok.json", "type": "file", "size": 1}]

    class Fake:  # a backend answering hostile names
        async_impl = False

        def ls(self, path, detail=True):
            return entries if path == f"{root}/logs" else []

        @staticmethod
        def _strip_protocol(p):
            return p

    got = storage.list_tree(Fake(), f"{root}/logs", discovery.remote_descend)
    assert list(got.files) == ["ok.json"] and not got.dirs
    assert len(got.notes) == 3


def test_listing_skips_what_discovery_never_reads(mem, tmp_path):
    fs, root = mem
    span = f"{root}/run/n_1_20240101000000000_ascend_pt"
    fs.pipe(f"{span}/ASCEND_PROFILER_OUTPUT/kernel_details.csv", b"a")
    fs.pipe(f"{span}/FRAMEWORK/raw.bin", b"a")
    fs.pipe(f"{span}/PROF_000001_20240101000000000_ABC/device_0/data/raw.bin", b"a")
    fs.pipe(f"{root}/data/k.pt.trace.json", b"{}")  # a run dir named like a skipped one
    listing = storage.list_tree(fs, root, discovery.remote_descend)
    assert "run/n_1_20240101000000000_ascend_pt/FRAMEWORK" in listing.dirs
    assert "run/n_1_20240101000000000_ascend_pt/PROF_000001_20240101000000000_ABC/device_0" \
        in listing.dirs
    assert sorted(listing.files) == [
        "data/k.pt.trace.json",
        "run/n_1_20240101000000000_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"]


def test_missing_backend_and_unknown_protocol_are_named(tmp_path):
    import importlib.util

    src = storage.open_logdir("nosuchproto://bucket/x", str(tmp_path))
    with pytest.raises(storage.StorageError, match="no storage backend for nosuchproto://"):
        src.sync(discovery.remote_descend)
    if importlib.util.find_spec("gcsfs") is None:
        src = storage.open_logdir("gs://bucket/x", str(tmp_path))
        with pytest.raises(storage.StorageError,
                           match=r"needs the \[gcs\] extra: pip install "
                                 r"'tensorboard-plugin-npu-profiler\[gcs\]'"):
            src.sync(discovery.remote_descend)


def test_urls_and_credentials_in_them():
    assert storage.is_url("s3://b/p") and storage.is_url("hdfs://nn:8020/x")
    assert not storage.is_url("/tmp/x") and not storage.is_url("file:///tmp/x")
    assert not storage.is_url("/data/odd://name") and not storage.is_url("://x")
    assert storage.display_url("ftp://user:secret@host/dir/") == "ftp://host/dir"
    assert isinstance(storage.open_logdir("file:///tmp/x", "/tmp/m"), storage.LocalLogdir)


def test_a_local_copy_of_another_version_is_written_again(mem, tmp_path):
    """A fetch that raced with a change can leave another version's bytes behind; the next
    scan sees the local file is not the listed version and starts over from a stub."""
    fs, root = mem
    body = b"x" * (storage.SMALL_BYTES + 10)
    fs.pipe(f"{root}/r/k.csv", body)
    src = _logdir(tmp_path, f"memory://{root}")
    src.sync(discovery.remote_descend)
    local = os.path.join(src.path, "r", "k.csv")
    storage.materialize(src.path, [local])
    listed = os.stat(local)
    with open(local, "r+b") as fh:  # another version: other bytes, other mtime
        fh.write(b"old!")
    os.utime(local, ns=(listed.st_mtime_ns - 10**9, listed.st_mtime_ns - 10**9))
    src.sync(discovery.remote_descend)
    assert os.stat(local).st_mtime_ns == listed.st_mtime_ns
    storage.materialize(src.path, [local])
    with open(local, "rb") as fh:
        assert fh.read() == body


def test_an_unreachable_endpoint_is_a_clear_error_within_seconds(tmp_path, monkeypatch):
    pytest.importorskip("s3fs")
    import time

    from tests.tb_server import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k",
                        "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                        "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    src = storage.open_logdir("s3://bucket/prefix", str(tmp_path))
    started = time.time()
    with pytest.raises(storage.StorageError) as err:
        src.sync(discovery.remote_descend)
    assert time.time() - started < 20  # bounded retries and timeouts, not minutes
    assert str(err.value).startswith("s3://bucket/prefix: cannot list: cannot reach the"
                                     f" storage endpoint {endpoint}")
