"""examples/signup.py runs as the README says, against a users table of its own (a schema first
in the search_path, given in the DSN): a registered email is taken, a new one registered, the same
again taken; the DSN from --dsn or $DATABASE_URL."""

import os
import subprocess
import sys
import uuid

import psycopg
import pytest

pytestmark = pytest.mark.server

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "signup.py")


@pytest.fixture
def signup_dsn(dsn):
    schema = "signup_%s" % uuid.uuid4().hex[:10]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA %s" % schema)
        c.execute("CREATE TABLE %s.users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)" % schema)
        c.execute("INSERT INTO %s.users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(0, 999) i"
                  % schema)
        c.execute("CREATE INDEX users_email_bloom ON %s.users USING bloomfilter (email) WITH (capacity = 10000)"
                  % schema)
    yield "%s options='-c search_path=%s,public'" % (dsn, schema)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA %s CASCADE" % schema)


def run(arguments, environment=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), ".."), **(environment or {}))
    return subprocess.run([sys.executable, EXAMPLE, *arguments], env=env, capture_output=True, text=True,
                          check=True, timeout=60).stdout.splitlines()


def test_signup_example(signup_dsn):
    lines = run(["--dsn", signup_dsn, "user7@mail.com", "new@mail.com", "new@mail.com"])
    assert lines[0].startswith("followed users_email_bloom: ")
    assert lines[1] == "user7@mail.com: taken (the follower said maybe, the table has it)"
    assert lines[2] == "new@mail.com: registered (the follower said absent: no lookup)"
    assert lines[3].startswith("new@mail.com: taken (")
    lines = run(["other@mail.com"], {"DATABASE_URL": signup_dsn})
    assert lines[1] == "other@mail.com: registered (the follower said absent: no lookup)"
