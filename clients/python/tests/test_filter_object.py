"""Filter as a Python object: pickled (also through multiprocessing) as its byte format,
unhashable since it changes, no len() (nbytes is its size), copies independent."""

import copy
import multiprocessing
import pickle

import pytest

from bloomfilter import Filter

KEYS = ["user%d@mail.com" % i for i in range(2000)]


def made():
    f = Filter.empty(5000, 0.01)
    f.update(KEYS)
    return f


def answers(f):
    return [f.contains(k) for k in KEYS] + [f.contains("ghost%d" % i) for i in range(2000)]


def test_pickle_round_trip():
    f = made()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        g = pickle.loads(pickle.dumps(f, protocol))
        assert g == f and g is not f and g.to_bytes() == f.to_bytes()
        assert answers(g) == answers(f)
        g.add("only-in-g")
        assert "only-in-g" in g and g != f
    # The byte format is validated again when loaded: a damaged pickle is refused.
    data = bytearray(pickle.dumps(f))
    data[data.index(f.to_bytes()[:16])] ^= 0xFF  # the magic number
    with pytest.raises(ValueError):
        pickle.loads(bytes(data))


def test_copies():
    f = made()
    for g in (copy.copy(f), copy.deepcopy(f), f.copy()):
        assert g == f and g is not f
        g.add("only-in-copy")
        assert g != f and f == made()  # f is unchanged


def count_present(f):
    return sum(map(f.contains, KEYS))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing(method):
    f = made()
    with multiprocessing.get_context(method).Pool(2) as pool:
        assert pool.map(count_present, [f, f]) == [len(KEYS), len(KEYS)]


def test_unhashable_and_no_len():
    f = made()
    with pytest.raises(TypeError):
        hash(f)
    with pytest.raises(TypeError):
        {f}
    with pytest.raises(TypeError):
        len(f)
    assert bool(f) and bool(Filter.empty(10))  # truthy, empty or not
    assert f.nbytes == len(f.to_bytes()) == f.info().bytes - 4
    assert f.inserted == len(KEYS)
    assert {f.to_bytes(): 1}[made().to_bytes()] == 1  # keyed by content where that is meant
