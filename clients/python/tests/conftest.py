"""Fixtures for the tests against a server: a fresh database with the extension for the whole
session. The server is given by the libpq environment (PGHOST, PGPORT, PGUSER), as
test/run-python.sh sets it for a throwaway cluster; without PGHOST those tests are skipped."""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PGHOST"):
        return
    skip = pytest.mark.skip(reason="no server: set PGHOST/PGPORT/PGUSER (test/run-python.sh does)")
    for item in items:
        if "server" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "server: needs a PostgreSQL server with the extension")


def _database(encoding, locale):
    """A new database with the extension, of an explicit encoding and locale (whatever the
    cluster's): its conninfo, and a function dropping it."""
    import psycopg
    name = "bloomfilter_python_%s" % uuid.uuid4().hex[:12]
    with psycopg.connect(dbname="postgres", autocommit=True) as admin:
        admin.execute("CREATE DATABASE \"%s\" ENCODING '%s' LC_COLLATE '%s' LC_CTYPE '%s' "
                      "TEMPLATE template0" % (name, encoding, locale, locale))
    with psycopg.connect(dbname=name, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION bloomfilter")

    def drop():
        with psycopg.connect(dbname="postgres", autocommit=True) as admin:
            admin.execute('DROP DATABASE "%s" WITH (FORCE)' % name)
    return "dbname=%s" % name, drop


@pytest.fixture(scope="session")
def dsn():
    """A UTF8 database in the C.UTF-8 locale, for the whole session."""
    conninfo, drop = _database("UTF8", "C.UTF-8")
    yield conninfo
    drop()


@pytest.fixture(scope="session")
def ascii_dsn():
    """A SQL_ASCII database in the C locale (where psycopg returns text as bytes)."""
    conninfo, drop = _database("SQL_ASCII", "C")
    yield conninfo
    drop()


@pytest.fixture
def conn(dsn):
    """A psycopg (3) connection in autocommit with the bloom adapters registered."""
    import psycopg
    import bloomfilter.psycopg
    with psycopg.connect(dsn, autocommit=True) as connection:
        bloomfilter.psycopg.register(connection)
        yield connection


@pytest.fixture
def conn2(dsn):
    """A psycopg2 connection in autocommit with the bloom adapters registered."""
    import psycopg2
    import bloomfilter.psycopg2
    connection = psycopg2.connect(dsn)
    connection.autocommit = True
    bloomfilter.psycopg2.register(connection)
    yield connection
    connection.close()


@pytest.fixture(params=["native", "python"])
def check_path(request, monkeypatch):
    """Filters made in the test check with the compiled check (bloomfilter._native) or in pure
    Python. Without the compiled module the "native" runs are skipped, or fail where
    BLOOMFILTER_NATIVE_REQUIRED=1 (test/run-python.sh builds it and sets that)."""
    from bloomfilter import _native_check
    if request.param == "python":
        monkeypatch.setattr(_native_check, "native", None)
    elif _native_check.native is None:
        if os.environ.get("BLOOMFILTER_NATIVE_REQUIRED") == "1":
            pytest.fail("bloomfilter._native is not built (test/run-python.sh builds it)")
        pytest.skip("bloomfilter._native is not built (python3 setup.py build_ext --inplace)")
    return request.param
