"""JSON number tokens msgspec cannot decode (`json_numbers.quote_unreadable_numbers`): a bare
N/A and numbers beyond float's range are read as their text, in small documents
(`tolerant.read_json_file`) as in traces (tests/readers/test_trace_scanned.py)."""
import json

import msgspec
import pytest

from tb_plugin.readers.json_numbers import decode_json, quote_unreadable_numbers
from tb_plugin.readers.tolerant import InputError, read_json_file


@pytest.mark.parametrize("text, want", [
    (b'{"a": 1e400}', {"a": "1e400"}),
    (b'[1e400, -2.5E+999, 1e300, 3]', ["1e400", "-2.5E+999", 1e300, 3]),
    (b'1e400', "1e400"),
    (b'{"n": N/A, "t": "N/A"}', {"n": "N/A", "t": "N/A"}),
    (b'{"big": ' + b"1" * 400 + b'.5}', {"big": "1" * 400 + ".5"}),
])
def test_unreadable_numbers_read_as_their_text(text, want):
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(text)
    assert decode_json(msgspec.json.decode, text) == want


def test_documents_msgspec_reads_are_not_touched():
    for text in (b'{"a": 1e308, "b": -1e-400, "c": 99999999999999999999999}', b'[]'):
        assert quote_unreadable_numbers(text) is None
        assert decode_json(msgspec.json.decode, text) == json.loads(text)


def test_other_damage_keeps_its_own_error():
    with pytest.raises(msgspec.DecodeError, match="truncated"):
        decode_json(msgspec.json.decode, b'{"a": 1e400, "b": [1, 2')


def test_small_documents(tmp_path):
    ok = tmp_path / "profiler_info.json"
    ok.write_bytes(b'{"config": {"rank": 1e400}, "start": N/A}')
    assert read_json_file(str(ok)) == {"config": {"rank": "1e400"}, "start": "N/A"}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"config": {"rank": 1e400}')
    with pytest.raises(InputError, match="invalid JSON"):
        read_json_file(str(bad))
