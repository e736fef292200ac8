"""tb_plugin.natural_sort.natural_key: numbers inside names compare as numbers."""
from tb_plugin.natural_sort import natural_key


def test_numbers_compare_by_value():
    names = ["rank10", "rank2", "rank1", "rank1a", "rank", "device_9", "device_10"]
    assert sorted(names, key=natural_key) == [
        "device_9", "device_10", "rank", "rank1", "rank1a", "rank2", "rank10"]


def test_mixed_leading_digits_and_text_never_raise():
    names = ["10x", "x10", "2", "", "a2b3", "a2b10", "a02b4"]
    out = sorted(names, key=natural_key)
    assert out == ["", "2", "10x", "a2b3", "a02b4", "a2b10", "x10"]


def test_key_parts_alternate_text_and_numbers():
    assert natural_key("msprof_slice_3_12.json") == ["msprof_slice_", 3, "_", 12, ".json"]
    assert natural_key("abc") == ["abc"]
