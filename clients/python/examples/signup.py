#!/usr/bin/env python3
"""Sign-ups checked against a bloomfilter index that the application follows in its own memory.

    python3 signup.py [--dsn DSN] EMAIL...

For each email, the follower's copy of the index answers with no round trip. "Absent": the
email is inserted at once, with no lookup (the unique index still guards against a row committed
since the copy's last refresh). "Maybe" (present, a false positive, or a copy past max_lag): the
table is asked first. The database: --dsn, else $DATABASE_URL, else libpq's environment (PGHOST,
PGPORT, PGUSER, PGDATABASE). It expects the table and indexes of the README's first use:

    CREATE EXTENSION bloomfilter;
    CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
    CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
      WITH (capacity = 1000000, error_rate = 0.01);

Needs psycopg (3) and the package (pip install ./clients/python, or from a clone
PYTHONPATH=clients/python python3 clients/python/examples/signup.py ...). `make demo` runs it.
"""

import argparse
import os
import time

import psycopg

from bloomfilter.follow import IndexFollower


def sign_up(conn, follower, email):
    """Inserts the email unless it is taken; says which, and how it was known."""
    if follower.contains(email):
        if conn.execute("SELECT EXISTS (SELECT 1 FROM users WHERE email = %s)", [email]).fetchone()[0]:
            return "taken (the follower said maybe, the table has it)"
        how = "the follower said maybe, the table has no such row"
    else:
        how = "the follower said absent: no lookup"
    try:
        conn.execute("INSERT INTO users (email) VALUES (%s)", [email])
    except psycopg.errors.UniqueViolation:
        # Committed since the follower's last refresh: the unique index turned it away.
        return "taken (%s, the unique index refused the insert)" % how
    return "registered (%s)" % how


def main():
    parser = argparse.ArgumentParser(description="Sign emails up, checked against the followed index "
                                                 "users_email_bloom first.")
    parser.add_argument("emails", nargs="+", metavar="EMAIL")
    parser.add_argument("--dsn", default=os.environ.get("DATABASE_URL", ""),
                        help="a libpq connection string or URL (default: $DATABASE_URL, else PG* variables)")
    args = parser.parse_args()
    started = time.perf_counter()
    # The follower opens a connection of its own and refreshes its copy every 0.1 s from a
    # thread; once the last refresh is over 5 s old, it answers "maybe" to everything.
    with IndexFollower(args.dsn, "users_email_bloom", interval=0.1, max_lag=5) as follower, \
            psycopg.connect(args.dsn, autocommit=True) as conn:
        print("followed users_email_bloom: %d bytes read in %.0f ms"
              % (follower.filter.nbytes, (time.perf_counter() - started) * 1000))
        for email in args.emails:
            print("%s: %s" % (email, sign_up(conn, follower, email)))


if __name__ == "__main__":
    main()
