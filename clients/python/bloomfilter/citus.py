"""CitusIndexFollower: the bloomfilter index of a Citus distributed table, followed on the nodes
that hold its shards, answering contains(key) with no round trip.

    from bloomfilter.citus import CitusIndexFollower
    follower = CitusIndexFollower(coordinator_dsn, "users_email_bloom", max_lag=5)
    if not follower.contains(email):   # in no shard as of follower.lag seconds ago
        ...

The coordinator's index is the empty shell table's, which the index functions refuse: the rows
are in the shards, each with its own index on the node that holds it. bloom_index_shards(index),
asked of the coordinator, lists them (shard, index name, node). One MultiIndexFollower per node
follows that node's shard indexes on one connection, and a key is present when one of them says
so. The listing is read again every `shards_interval` seconds: when a shard moves (its new
placement listed, the old one no longer), the new placement's index is loaded before the old one
is forgotten, so that no shard is ever without a copy. The listing's age is part of the lag.
"""

import collections
import logging
import os
import threading
import time

# The followers of bloomfilter.follow's registry are set up again in a forked child, this one's
# listing among them (the nodes' followers set themselves up); the parent's connections a child
# inherited are kept there, never used nor closed.
from .follow import (EVENTS, ExtensionVersionError, MultiIndexFollower, _followers, _inherited,
                     _reconnector, _restart_lock, _text, _union_contains_many,
                     _version_tuple)

__all__ = ["CitusIndexFollower", "ShardPlacement", "CitusNode", "CITUS_EVENTS",
           "MIN_CITUS_EXTENSION_VERSION"]

# The first extension with bloom_index_shards.
MIN_CITUS_EXTENSION_VERSION = "2.2"

# What on_event(event, info) is called with: the followers' events, and "shards" when the
# listing changes.
CITUS_EVENTS = EVENTS + ("shards",)

_EXTENSION = ("SELECT e.extversion FROM pg_catalog.pg_extension e "
              "WHERE e.extname OPERATOR(pg_catalog.=) 'bloomfilter'")
_SHARDS = ("SELECT s.shard_id, s.shard_index, s.node_name, s.node_port "
           "FROM bloom_index_shards(%s::text::pg_catalog.regclass) s")
# Citus hides the shards and their indexes from queries of pg_class on a node, which the follower
# makes about each shard's index (the key's type and expression).
_SHOW_SHARDS = "SET citus.override_table_visibility = off"

ShardPlacement = collections.namedtuple("ShardPlacement", "shard_id index host port")
ShardPlacement.__doc__ = """One placement of a shard, as bloom_index_shards lists it: the shard's
id, its index's name on the node (Citus's shard_name(): users_email_bloom_102008), and the node's
host and port as the coordinator's metadata names them (pg_dist_node)."""

CitusNode = collections.namedtuple("CitusNode", "host port follower")
CitusNode.__doc__ = """A node followed: its host, port and the MultiIndexFollower of its shard
indexes (follower.indexes: {index name: that index's follower})."""

_log = logging.getLogger("bloomfilter.citus")

class _NodeFollower(MultiIndexFollower):
    """The shard indexes of one node: a MultiIndexFollower whose indexes can change (follow()).
    It adds _index_class objects as MultiIndexFollower's constructor makes them, and takes an
    index whose copy (_state) is set as loaded."""

    def __init__(self, conn, index_names, interval, background, max_lag, on_event):
        self._index_event = on_event
        super().__init__(conn, index_names, interval=interval, background=background,
                         max_lag=max_lag, on_event=on_event)

    def follow(self, index_names):
        """Follows these indexes from now on, in this order: those not followed yet are loaded
        first (on this connection), then those not named are dropped. If one cannot be loaded,
        raises its error, having dropped none. The indexes followed before keep their copies."""
        names = list(dict.fromkeys(index_names))
        if not names:
            raise ValueError("no index to follow")
        added = {name: self._index_class(self, name, self.max_lag, self._index_event)
                 for name in names if name not in self.indexes}
        if added:
            refused = self._join_added(list(added.values()))
            # Refreshed from now on by the follower's thread too (its refresh() takes the indexes
            # of the moment); the first refresh to reach one loads it.
            self.indexes = {**self.indexes,
                            **{name: index for name, index in added.items() if index not in refused}}
            try:
                self.refresh()
            except Exception:
                pass  # an index followed before may fail (a placement already dropped)
            failed = [index for index in added.values() if index._state is None]
            if failed:
                self.indexes = {name: index for name, index in self.indexes.items()
                                if name not in added or index._state is not None}
                self._leave_indexes(failed)
                raise failed[0].last_error or RuntimeError("index %s not loaded" % failed[0].index_name)
        gone = [index for name, index in self.indexes.items() if name not in names]
        self.indexes = {name: self.indexes[name] for name in names}
        self._leave_indexes(gone)

    # What the shared mode (bloomfilter.shared's _SharedCitusNode) changes: the indexes added,
    # before they are followed (those it cannot follow returned, each with its last_error), and
    # those no longer followed.
    def _join_added(self, indexes):
        return []

    def _leave_indexes(self, indexes):
        pass


def _node_template(coordinator):
    """A function (host, port) -> a new connection to that node, like `coordinator` (a conninfo
    string or a psycopg or psycopg2 connection): its parameters with the node's host and port."""
    if isinstance(coordinator, str):
        try:
            import psycopg  # noqa: F401
            from psycopg.conninfo import conninfo_to_dict
            return _psycopg_node(conninfo_to_dict(coordinator))
        except ImportError:
            import psycopg2.extensions
            return _psycopg2_node(psycopg2.extensions.parse_dsn(coordinator))
    module = type(coordinator).__module__.split(".")[0]
    if module == "psycopg":
        from psycopg.conninfo import conninfo_to_dict
        parameters = conninfo_to_dict(coordinator.info.dsn)
        if coordinator.info.password:
            parameters["password"] = coordinator.info.password
        return _psycopg_node(parameters)
    if module == "psycopg2":
        parameters = dict(coordinator.info.dsn_parameters)
        if coordinator.info.password:
            parameters["password"] = coordinator.info.password
        return _psycopg2_node(parameters)
    return None


def _at_node(parameters, host, port):
    parameters = dict(parameters, host=host, port=str(port))
    # The coordinator's address, if given, would take the place of the node's host.
    parameters.pop("hostaddr", None)
    if os.environ.get("PGHOSTADDR"):
        parameters["hostaddr"] = ""  # libpq takes an empty hostaddr as none
    return parameters


def _psycopg_node(parameters):
    def connect(host, port):
        import psycopg
        from psycopg.conninfo import make_conninfo
        return psycopg.connect(make_conninfo(**_at_node(parameters, host, port)), autocommit=True)
    return connect


def _psycopg2_node(parameters):
    def connect(host, port):
        import psycopg2
        return psycopg2.connect(**_at_node(parameters, host, port))
    return connect


def _connection_lost(conn):
    return bool(getattr(conn, "closed", False) or getattr(conn, "broken", False))


class CitusIndexFollower:
    """Follows the bloomfilter index of a Citus distributed table on the nodes holding its shards
    and answers contains(key) and contains_many(keys) for their union.

    coordinator: a psycopg (3) or psycopg2 connection to the coordinator (used by the follower
    alone, for the listing), a conninfo string, or a function returning a new connection; after a
    dropped connection the follower opens a new one the same way. index_name: the distributed
    table's index, as in SQL on the coordinator. interval: seconds between the refreshes of each
    node (as IndexFollower's). shards_interval: seconds between readings of the shard listing
    (bloom_index_shards). max_lag: seconds, longer than shards_interval (the listing's age is part
    of the lag); once the older of the listing and the nodes' last refreshes is older,
    contains() answers True. node_conninfo: a function (host, port) -> a conninfo string (or a new
    connection) for a node, by the host and port of the coordinator's metadata (pg_dist_node),
    called for each new connection to it; by default the coordinator's parameters (database,
    user, password, TLS) with that host and port. background=False: no threads (call refresh()).
    on_event(event, info): "stale" and "fresh" are the whole follower's, "reload" and "capacity"
    a shard index's (info also has host and port), "shards" a change of the listing.
    """

    def __init__(self, coordinator, index_name, interval=0.1, shards_interval=1.0, background=True,
                 max_lag=None, on_event=None, node_conninfo=None):
        if not interval > 0:
            raise ValueError("interval must be a positive number of seconds")
        if not shards_interval > 0:
            raise ValueError("shards_interval must be a positive number of seconds")
        if max_lag is not None and not max_lag > shards_interval:
            raise ValueError("max_lag (%s s) must be longer than shards_interval (%s s): the "
                             "listing's age is part of the lag" % (max_lag, shards_interval))
        self.index_name = index_name
        self.interval = interval
        self.shards_interval = shards_interval
        self.max_lag = max_lag
        self.on_event = on_event
        self._node_conninfo = node_conninfo
        self._coordinator = None
        if callable(coordinator) and not hasattr(coordinator, "cursor"):
            self._connect_coordinator = coordinator
        else:
            self._connect_coordinator = _reconnector(coordinator)
        # How to reach a node by default: the coordinator's conninfo, or (read at its first
        # connection) its connection's parameters.
        self._template = _node_template(coordinator) if isinstance(coordinator, str) else None
        self._nodes = {}            # (host, port) -> CitusNode; replaced whole on each change
        self._active = ()           # the shard indexes' followers contains() asks
        self._placements = []
        self._listing_lock = threading.Lock()
        self._flag_lock = threading.Lock()
        self._deferring = None      # the thread listing, whose events wait for the lock's release
        self._deferred = []
        self._stop = threading.Event()
        self._thread = None
        self._started = False
        self._closed = False
        self._pid = os.getpid()
        self._listed_at = None      # time.monotonic() when the last listing applied was asked for
        self._listed_wall = None
        self._stale_since = None
        self._stale_lag = None
        # The counters of the shard indexes and nodes no longer followed.
        self._retired = dict(refreshes=0, reloads=0, errors=0, reconnects=0, queries=0)
        self.last_error = None      # the last listing's error, until one succeeds
        self.checks = 0
        self.listings = 0
        self.listing_errors = 0
        self.coordinator_reconnects = 0
        self.coordinator_queries = 0
        self.extension_version = None
        try:
            if not isinstance(coordinator, str) and hasattr(coordinator, "cursor"):
                self._attach(coordinator)
            self.refresh_shards()
        except BaseException:
            self.close()
            raise
        _followers.add(self)
        if background:
            self.start()

    # -- answers ------------------------------------------------------------------------------

    def contains(self, key):
        """False: no shard has a row with this key committed before lag seconds ago; True: one
        probably has, or the follower cannot tell (past max_lag, or a key it cannot lower as the
        server would)."""
        self.checks += 1
        if self._listing_too_old():
            return True
        for index in self._active:
            if index.contains(key):
                return True
        return False

    __contains__ = contains

    def contains_many(self, keys):
        """[contains(key) for key in keys]: each shard index checks, in one batch, the keys no
        index before it has."""
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        self.checks += len(keys)
        if self._listing_too_old():
            return [True] * len(keys)
        return _union_contains_many(self._active, keys)

    @property
    def shards(self):
        """The shard placements followed (ShardPlacement), as last listed."""
        return list(self._placements)

    @property
    def nodes(self):
        """The nodes followed (CitusNode: host, port, follower)."""
        return list(self._nodes.values())

    @property
    def lag(self):
        """Seconds since the older of the last listing applied and the shard indexes' last
        refreshes: every row committed before then is found."""
        lag = time.monotonic() - self._listed_at
        for index in self._active:
            lag = max(lag, index.lag)
        return lag

    def is_fresh(self, max_lag=None):
        """True when lag is at most max_lag (the follower's if not given; with neither, True)."""
        bound = self.max_lag if max_lag is None else max_lag
        return bound is None or self.lag <= bound

    def stats(self):
        """The shard indexes' counters added up (those no longer followed included), for an
        exporter: index, lag, fresh, last_refresh (the oldest, the listing's included), checks,
        refreshes, reloads, reconnects (the coordinator's too), errors, last_error, queries,
        extension_version (the coordinator's), over_capacity (any shard index), listings,
        listing_errors, shards (placements followed), and nodes: [{host, port, indexes: the
        node's MultiIndexFollower.stats()}]."""
        nodes = [{"host": node.host, "port": node.port, "indexes": node.follower.stats()}
                 for node in self._nodes.values()]
        indexes = [s for node in nodes for s in node["indexes"].values()]
        connections = [node.follower for node in self._nodes.values()]
        lag = self.lag
        refreshed = [self._listed_wall] + [s["last_refresh"] for s in indexes]
        errors = [self.last_error] + [index.last_error for index in self._active]
        last_error = next((error for error in errors if error is not None), None)
        return {
            "index": self.index_name,
            "lag": lag,
            "fresh": self.max_lag is None or lag <= self.max_lag,
            "last_refresh": None if None in refreshed else min(refreshed),
            "checks": self.checks,
            "refreshes": self._retired["refreshes"] + sum(s["refreshes"] for s in indexes),
            "reloads": self._retired["reloads"] + sum(s["reloads"] for s in indexes),
            "reconnects": (self._retired["reconnects"] + self.coordinator_reconnects
                           + sum(f.reconnects for f in connections)),
            "errors": self._retired["errors"] + sum(s["errors"] for s in indexes),
            "last_error": None if last_error is None else str(last_error),
            "queries": (self._retired["queries"] + self.coordinator_queries
                        + sum(f.queries for f in connections)),
            "extension_version": self.extension_version,
            "over_capacity": any(s["over_capacity"] for s in indexes),
            "listings": self.listings,
            "listing_errors": self.listing_errors,
            "shards": len(self._placements),
            "nodes": nodes,
        }

    # -- staleness ------------------------------------------------------------------------------

    def _listing_too_old(self):
        if self.max_lag is None or time.monotonic() - self._listed_at <= self.max_lag:
            return False
        if self._pid != os.getpid():
            # A child forked where Python's at-fork handlers did not run (uWSGI without
            # py-call-osafterfork): no listing thread of its own until set up again.
            with _restart_lock:
                if self._pid != os.getpid():
                    self._after_fork()
        if self._stale_since is None:
            self._update_freshness()
        return True

    def _update_freshness(self):
        """"stale" when the follower passes max_lag (the listing or a shard index), "fresh" when
        the last of them is back under it; each logged and given to on_event once."""
        if self.max_lag is None or self._closed or self._listed_at is None:
            return
        lag = self.lag
        with self._flag_lock:
            if lag > self.max_lag:
                if self._stale_since is not None:
                    return
                self._stale_since, self._stale_lag = time.monotonic(), lag
                errors = [self.last_error] + [index.last_error for index in self._active]
                error = next((e for e in errors if e is not None), None)
                event, info = "stale", {"index": self.index_name, "lag": lag,
                                        "max_lag": self.max_lag, "error": error}
            elif self._stale_since is not None:
                reached = self._stale_lag + (time.monotonic() - self._stale_since)
                self._stale_since = self._stale_lag = None
                event, info = "fresh", {"index": self.index_name, "lag": reached}
            else:
                return
        if event == "stale":
            _log.warning("follower of %s (Citus): the copy is %.1f s old, more than max_lag=%s s "
                         "(%s); contains() answers True until it is fresh again", self.index_name,
                         lag, self.max_lag, error or "no refresh since")
        else:
            _log.warning("follower of %s (Citus): fresh again", self.index_name)
        self._call(event, info)

    def _call(self, event, info):
        if self.on_event is None:
            return
        if self._deferring == threading.get_ident():
            self._deferred.append((event, info))
            return
        try:
            self.on_event(event, info)
        except Exception:
            _log.exception("follower of %s: the on_event callback raised on %r", self.index_name, event)

    def _node_event(self, host, port):
        def on_event(event, info):
            if event in ("stale", "fresh"):
                self._update_freshness()  # the whole follower's, not one shard index's
            else:
                self._call(event, dict(info, host=host, port=port))
        return on_event

    # -- keeping current ------------------------------------------------------------------------

    def refresh_shards(self):
        """Reads the listing and applies it: the placements newly listed loaded (a node's new
        connection, or new indexes on a node's), then those no longer listed forgotten. Raises,
        forgetting nothing, if the coordinator cannot be reached or a new placement not loaded."""
        # The events of the nodes loaded meanwhile are kept until the lock is released, so that
        # a callback may call refresh_shards().
        events = []
        try:
            with self._listing_lock:
                self._deferring, self._deferred = threading.get_ident(), events
                try:
                    self._refresh_shards_locked()
                finally:
                    self._deferring = None
        finally:
            for event, info in events:
                self._call(event, info)
            self._update_freshness()

    def _refresh_shards_locked(self):
        if self._closed:
            raise RuntimeError("the follower is closed")
        started, wall = time.monotonic(), time.time()
        try:
            listed = self._list()
            if not listed:
                raise LookupError("bloom_index_shards(%r) lists no shard placement" % self.index_name)
            changes = self._apply(listed)
        except Exception as error:
            self.last_error = error
            self.listing_errors += 1
            raise
        self.last_error = None
        self.listings += 1
        self._listed_at, self._listed_wall = started, wall
        if changes is not None:
            added, removed = changes
            _log.info("follower of %s (Citus): shard placements added %s, removed %s", self.index_name,
                      [tuple(p) for p in added], [tuple(p) for p in removed])
            self._call("shards", {"index": self.index_name, "added": added, "removed": removed})

    def refresh(self):
        """Reads the listing, then refreshes every node; raises the first error once all were
        tried."""
        errors = []
        try:
            self.refresh_shards()
        except Exception as error:
            errors.append(error)
        for node in self.nodes:
            try:
                node.follower.refresh()
            except Exception as error:
                errors.append(error)
        self._update_freshness()
        if errors:
            raise errors[0]

    def start(self):
        """Starts the background threads: each node's (every `interval` seconds) and the
        listing's (every `shards_interval`)."""
        if self._thread is not None or self._closed:
            return
        self._started = True
        for node in self.nodes:
            node.follower.start()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="bloomfilter-citus-follower", daemon=True)
        self._thread.start()

    def close(self):
        """Stops the threads and closes every connection. The copies still answer, as a closed
        IndexFollower's do (their lag growing)."""
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._listing_lock:
            for node in self._nodes.values():
                node.follower.close()
            self._drop_coordinator()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _run(self):
        next_start = time.monotonic() + self.shards_interval
        while not self._stop.wait(max(0.0, next_start - time.monotonic())):
            next_start = max(next_start + self.shards_interval, time.monotonic())
            try:
                self.refresh_shards()
            except Exception:
                pass  # kept in last_error; the lag grows until a listing succeeds
            self._update_freshness()  # a node past max_lag with no check to notice it

    @property
    def _name(self):  # for bloomfilter.follow's at-fork hook
        return self.index_name

    def _after_fork(self):
        # In a forked child: the parent's locks may have been held by its threads, and its
        # coordinator connection is the parent's session. The nodes' followers restart themselves.
        running = self._thread is not None and not self._closed
        self._listing_lock = threading.Lock()
        self._flag_lock = threading.Lock()
        self._deferring = None
        self._stop = threading.Event()
        self._thread = None
        if self._coordinator is not None:
            _inherited.append(self._coordinator)
            self._coordinator = None
        self._pid = os.getpid()
        if running:
            self.start()

    # -- the listing ------------------------------------------------------------------------------

    def _list(self):
        if self._coordinator is not None and _connection_lost(self._coordinator):
            self._drop_coordinator()
        if self._coordinator is None:
            if self._connect_coordinator is None:
                raise RuntimeError("the coordinator's connection is closed and the follower cannot "
                                   "open another")
            conn = self._connect_coordinator()
            self.coordinator_reconnects += 1
            self._attach(conn)
        try:
            cursor = self._coordinator.cursor()
            self.coordinator_queries += 1
            try:
                cursor.execute(_SHARDS, [self.index_name])
                rows = cursor.fetchall()
            finally:
                cursor.close()
        except Exception:
            if self._coordinator is not None and _connection_lost(self._coordinator):
                self._drop_coordinator()
            raise
        return [ShardPlacement(int(shard), _text(index), _text(host), int(port))
                for shard, index, host, port in rows]

    def _attach(self, conn):
        """Takes a new coordinator connection: autocommit, and the extension's version."""
        self._coordinator = conn
        try:
            if getattr(conn, "autocommit", True) is not True:
                conn.autocommit = True
            cursor = conn.cursor()
            self.coordinator_queries += 1
            try:
                cursor.execute(_EXTENSION)
                rows = cursor.fetchall()
            finally:
                cursor.close()
        except BaseException:
            self._drop_coordinator()
            raise
        version = _text(rows[0][0]) if rows else None
        if version is None or _version_tuple(version) < _version_tuple(MIN_CITUS_EXTENSION_VERSION):
            self._drop_coordinator()
            raise ExtensionVersionError(
                "the extension bloomfilter is %s on the coordinator: CitusIndexFollower needs "
                "version %s or later (bloom_index_shards): %s"
                % ("not installed" if version is None else "at version %s" % version,
                   MIN_CITUS_EXTENSION_VERSION,
                   "CREATE EXTENSION bloomfilter" if version is None else "ALTER EXTENSION bloomfilter UPDATE"))
        self.extension_version = version
        if self._template is None:
            self._template = _node_template(conn)

    def _drop_coordinator(self):
        conn, self._coordinator = self._coordinator, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def _node_connector(self, host, port):
        """A function opening a connection to the node, with the shards visible."""
        def connect():
            if self._node_conninfo is not None:
                target = self._node_conninfo(host, port)
                if isinstance(target, str):
                    try:
                        import psycopg
                        conn = psycopg.connect(target, autocommit=True)
                    except ImportError:
                        import psycopg2
                        conn = psycopg2.connect(target)
                else:
                    conn = target
            elif self._template is not None:
                conn = self._template(host, port)
            else:
                raise RuntimeError("the coordinator's connection does not say how it connected: give "
                                   "node_conninfo(host, port)")
            try:
                if getattr(conn, "autocommit", True) is not True:
                    conn.autocommit = True
                cursor = conn.cursor()
                try:
                    cursor.execute(_SHOW_SHARDS)
                finally:
                    cursor.close()
            except BaseException:
                conn.close()
                raise
            return conn
        return connect

    def _apply(self, listed):
        """Follows the placements listed: (added, removed) when they changed since the last
        listing applied (not the first), else None."""
        wanted = {}
        for placement in listed:
            names = wanted.setdefault((placement.host, placement.port), [])
            if placement.index not in names:
                names.append(placement.index)
        # 1. What is newly listed, loaded: a node not followed yet, or new indexes on a node
        # followed. What loads stays, even if another load fails: a copy of a listed placement.
        errors = []
        for (host, port), names in wanted.items():
            node = self._nodes.get((host, port))
            try:
                if node is None:
                    follower = self._node_follower(host, port, names)
                    self._nodes = {**self._nodes, (host, port): CitusNode(host, port, follower)}
                    if self._started and not self._closed:
                        follower.start()
                elif any(name not in node.follower.indexes for name in names):
                    node.follower.follow(list(node.follower.indexes) + names)
            except Exception as error:
                errors.append(error)
            self._activate()
        if errors:
            raise errors[0]
        # 2. Every placement listed has its copy: those no longer listed are forgotten, first by
        # contains(), then by their node.
        for key, node in list(self._nodes.items()):
            names = wanted.get(key)
            if names is None:
                self._nodes = {k: n for k, n in self._nodes.items() if k != key}
                self._activate()
                self._retire(node.follower.indexes.values())
                self._retired["reconnects"] += node.follower.reconnects
                self._retired["queries"] += node.follower.queries
                node.follower.close()
            elif list(node.follower.indexes) != names:
                gone = [index for name, index in node.follower.indexes.items() if name not in names]
                self._activate(gone)
                node.follower.follow(names)  # drops only: every name is loaded
                self._retire(gone)
        self._activate()
        first = self.listings == 0
        before, after = set(self._placements), set(listed)
        added = [p for p in listed if p not in before]
        removed = [p for p in self._placements if p not in after]
        self._placements = listed
        if not first and (added or removed):
            return added, removed
        return None

    def _node_follower(self, host, port, names):
        """A new node's follower of these shard indexes (no thread yet)."""
        return _NodeFollower(self._node_connector(host, port), names, self.interval, False,
                             self.max_lag, self._node_event(host, port))

    def _activate(self, leaving=()):
        """contains() asks every loaded copy of the nodes followed but those `leaving`."""
        self._active = tuple(index for node in self._nodes.values()
                             for index in list(node.follower.indexes.values())
                             if index._state is not None and index not in leaving)

    def _retire(self, indexes):
        for index in indexes:
            self._retired["refreshes"] += index.refreshes
            self._retired["reloads"] += index.reloads
            self._retired["errors"] += index.errors

    def __repr__(self):
        return "<bloomfilter.citus.CitusIndexFollower of %s: %d shards on %d nodes>" % (
            self.index_name, len(self._placements), len(self._nodes))
