"""tb_plugin.lru.LRU: recency order, entry and weight bounds, thread safety."""
import threading

import pytest

from tb_plugin.lru import LRU


def test_evicts_the_least_recently_used_entry():
    c = LRU(3)
    for k in "abc":
        c.put(k, k.upper())
    assert c.get("a") == "A"  # a is now the most recent; b is the oldest
    c.put("d", "D")
    assert c.keys() == ["c", "a", "d"]
    assert "b" not in c and c.get("b") is None and c.get("b", 0) == 0
    assert len(c) == 3


def test_put_of_an_existing_key_replaces_and_refreshes_it():
    c = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 3)
    c.put("c", 4)
    assert c.keys() == ["a", "c"] and c.get("a") == 3


def test_weight_bound_evicts_until_within_and_keeps_the_newest():
    c = LRU(100, max_weight=10, weigh=len)
    c.put("x", "aaaa")  # 4
    c.put("y", "bbbb")  # 8
    c.put("z", "ccc")   # 11 > 10: x goes
    assert c.keys() == ["y", "z"] and c.weight == 7
    c.put("big", "d" * 25)  # alone over the bound: kept, everything else evicted
    assert c.keys() == ["big"] and c.weight == 25
    assert c.pop("big") == "d" * 25 and c.weight == 0 and len(c) == 0
    c.put("q", "ab")
    c.put("q", "abcdef")
    assert c.weight == 6


def test_get_or_compute_computes_once_and_caches_falsy_values():
    c = LRU(4)
    calls = []

    def compute():
        calls.append(1)
        return None

    assert c.get_or_compute("k", compute) is None
    assert c.get_or_compute("k", compute) is None
    assert len(calls) == 1


def test_invalid_bounds_are_refused():
    with pytest.raises(ValueError):
        LRU(0)
    with pytest.raises(ValueError):
        LRU(3, max_weight=5)


def test_concurrent_use_keeps_the_bounds():
    c = LRU(50, max_weight=500, weigh=lambda v: v)
    errors = []

    def worker(seed):
        try:
            for i in range(2000):
                k = (seed * 7919 + i * 31) % 400
                c.put(k, k % 20)
                c.get((k + 1) % 400)
                if i % 50 == 0:
                    c.pop(k)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    keys = c.keys()
    assert len(keys) <= 50 and len(set(keys)) == len(keys)
    # The tracked weight is the sum of the remaining values (nothing lost or counted twice).
    assert c.weight == sum(c.get(k) for k in keys) and c.weight <= 500
    c.clear()
    assert len(c) == 0 and c.weight == 0
