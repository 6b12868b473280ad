"""bloomfilter: read, check, build and follow the bloom filters of the PostgreSQL extension
bloomfilter in the application's own memory.

    from bloomfilter import Filter, shard_of
    f = Filter.from_bytes(data)      # the bytes of a bloom value (bloom::bytea)
    "user7@mail.com" in f            # False: certainly never added

Adapters: bloomfilter.psycopg.register(conn) (also async connections and pools),
bloomfilter.psycopg2.register(conn), await bloomfilter.asyncpg.register(conn), and the
SQLAlchemy column type bloomfilter.sqlalchemy.Bloom.
Following an index: bloomfilter.follow.IndexFollower(conn, "users_email_bloom"), or with one
copy for the host's processes, bloomfilter.shared.SharedIndexFollower(dsn, "users_email_bloom");
the index of a Citus distributed table, on the nodes holding its shards:
bloomfilter.citus.CitusIndexFollower(coordinator, "users_email_bloom").
"""

from ._core import (FORMAT_VERSION_LAYERED, FORMAT_VERSIONS, Filter, Info, LayeredFilter,
                    UnsupportedVersionError, __version__, accelerator, composite_hash, key_bytes,
                    key_hash, shard_of)

__all__ = ["Filter", "LayeredFilter", "Info", "shard_of", "key_bytes", "key_hash", "composite_hash",
           "FORMAT_VERSIONS",
           "FORMAT_VERSION_LAYERED", "UnsupportedVersionError", "accelerator", "__version__"]
