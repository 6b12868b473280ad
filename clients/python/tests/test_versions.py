"""Versions: a filter of a format version newer than the client's is refused with an error that
names the client's version and says to upgrade it (from bytes, from the text form, and in a
follower); the client's version is pyproject.toml's; the follower reads the extension's version
when it connects, exposes it, and refuses a database whose extension is missing or too old."""

import asyncio
import os
import re

import psycopg
import pytest

import bloomfilter
from bloomfilter import Filter, UnsupportedVersionError
from bloomfilter import follow as follow_module
from bloomfilter.follow import (AsyncIndexFollower, ExtensionVersionError, IndexFollower,
                                MultiIndexFollower, MIN_EXTENSION_VERSION)

HERE = os.path.dirname(os.path.abspath(__file__))


def with_version(data, version):
    return data[:4] + bytes([version]) + data[5:]


def test_client_version_is_the_package_version():
    with open(os.path.join(HERE, "..", "pyproject.toml")) as pyproject:
        (declared,) = re.findall(r'(?m)^version = "([^"]+)"$', pyproject.read())
    assert bloomfilter.__version__ == declared
    assert tuple(map(int, declared.split("."))) >= (1, 1, 0)


@pytest.mark.parametrize("version", [4, 255])
def test_a_newer_format_version_asks_to_upgrade_the_client(version):
    data = with_version(Filter.empty(1000, 0.01).to_bytes(), version)
    for read in (lambda: Filter.from_bytes(data), lambda: Filter.from_text("\\x" + data.hex())):
        with pytest.raises(UnsupportedVersionError) as raised:
            read()
        message = str(raised.value)
        assert "format version %d, newer than this client" % version in message
        assert "bloomfilter-postgresql %s reads versions 1, 2 and 3" % bloomfilter.__version__ in message
        assert message.endswith("upgrade the Python client")
        assert "unsupported bloom format version" in message  # the server's reason, as before
        assert isinstance(raised.value, ValueError)
        assert raised.value.status == "unsupported_version" and raised.value.version == version


def test_version_0_is_malformed_not_newer():
    data = with_version(Filter.empty(1000, 0.01).to_bytes(), 0)
    with pytest.raises(ValueError) as raised:
        Filter.from_bytes(data)
    assert not isinstance(raised.value, UnsupportedVersionError)
    assert str(raised.value) == "invalid bloom value: unsupported bloom format version"


def make_index(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS versions_t (email text NOT NULL)")
    conn.execute("CREATE INDEX IF NOT EXISTS versions_t_bloom ON versions_t USING bloomfilter (email)")
    return "versions_t_bloom"


@pytest.mark.server
def test_followers_expose_the_extension_version(conn, dsn):
    index = make_index(conn)
    (version,) = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'").fetchone()
    with IndexFollower(dsn, index, background=False) as follower:
        assert follower.extension_version == version
    with MultiIndexFollower(dsn, [index], background=False) as follower:
        assert follower.extension_version == follower.index(index).extension_version == version

    async def follow():
        async with AsyncIndexFollower(dsn, index) as follower:
            return follower.extension_version
    assert asyncio.run(follow()) == version


@pytest.mark.server
def test_a_follower_given_a_newer_format_asks_to_upgrade_the_client(conn, dsn, monkeypatch):
    index = make_index(conn)
    # The server sends a filter of format version 4 (as a newer extension would).
    monkeypatch.setattr(follow_module, "_LOAD_CHUNKS", follow_module._LOAD_CHUNKS.replace(
        "bloom_index_filter(%s::text::oid::regclass)::bytea",
        "overlay(bloom_index_filter(%s::text::oid::regclass)::bytea PLACING '\\x04'::bytea FROM 5)"))
    with pytest.raises(UnsupportedVersionError, match="upgrade the Python client"):
        IndexFollower(dsn, index, background=False)


@pytest.fixture
def other_database():
    from conftest import _database
    conninfo, drop = _database("UTF8", "C.UTF-8")
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute("DROP EXTENSION bloomfilter")
    yield conninfo
    drop()


@pytest.mark.server
def test_an_old_or_missing_extension_is_refused(other_database):
    with pytest.raises(ExtensionVersionError, match="not installed in this database: CREATE EXTENSION bloomfilter"):
        IndexFollower(other_database, "anything", background=False)
    with psycopg.connect(other_database, autocommit=True) as c:
        # 1.3: before the index access method, bloom_index_filter and bloom_index_changes.
        c.execute("CREATE EXTENSION bloomfilter VERSION '1.3'")
    with pytest.raises(ExtensionVersionError) as raised:
        IndexFollower(other_database, "anything", background=False)
    message = str(raised.value)
    assert "at version 1.3 in this database" in message
    assert "%s or later" % MIN_EXTENSION_VERSION in message
    assert "bloomfilter-postgresql %s" % bloomfilter.__version__ in message
    assert "ALTER EXTENSION bloomfilter UPDATE" in message
    with pytest.raises(ExtensionVersionError, match="at version 1.3"):
        MultiIndexFollower(other_database, ["a", "b"], background=False)

    async def follow():
        async with AsyncIndexFollower(other_database, "anything"):
            pass
    with pytest.raises(ExtensionVersionError, match="at version 1.3"):
        asyncio.run(follow())
    with psycopg.connect(other_database, autocommit=True) as c:
        c.execute("ALTER EXTENSION bloomfilter UPDATE TO '1.4'")
        c.execute("CREATE TABLE t (email text NOT NULL)")
        c.execute("CREATE INDEX t_bloom ON t USING bloomfilter (email)")
        c.execute("INSERT INTO t VALUES ('a@mail.com')")
    with IndexFollower(other_database, "t_bloom", background=False) as follower:
        assert follower.extension_version == "1.4" and follower.contains("a@mail.com")
