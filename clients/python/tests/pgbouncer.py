"""PgBouncer processes of the tests' own, in front of the server the libpq environment names
(PGHOST, PGPORT, as test/run-python.sh sets them): a generated ini file in a directory of its
own, listening on 127.0.0.1 at a free port and on a Unix socket in that directory, auth_type =
trust with a userlist of the test user, every database (`*`) of the server reached through its
Unix socket. Never the system's service. As root, pgbouncer (which refuses to run as root) runs
as $BLOOM_TEST_USER (postgres), as the clusters do. bench/python_client.py uses it too."""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time


def binary():
    """The pgbouncer program: $PGBOUNCER, else on the PATH, else Debian's /usr/sbin (not on a
    user's PATH); None when it is not installed."""
    for candidate in (os.environ.get("PGBOUNCER"), shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgBouncer:
    """A pgbouncer in `pool_mode` (session or transaction). round_robin: server connections
    are reused in turn (server_round_robin = 1) rather than the last one released first, so
    that with two of them open (warm()) consecutive transactions of one client go to different
    server processes, as they do on a busy pool. session_entries: {name: database} entries in
    session mode beside the others (a pgbouncer database entry's own pool_mode). settings: more
    [pgbouncer] settings ({"server_login_retry": 1}). entries: {name: server conninfo (host,
    port, dbname)}, entries for other servers."""

    def __init__(self, pool_mode, round_robin=False, pool_size=4, session_entries=None, settings=None,
                 entries=None):
        self.program = binary()
        if self.program is None:
            raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
        self.pool_mode = pool_mode
        root = os.environ.get("CLUSTER_ROOT") or None
        self.dir = tempfile.mkdtemp(prefix="pgbouncer-%s-" % pool_mode, dir=root)
        os.chmod(self.dir, 0o755)
        self.user = os.environ.get("BLOOM_TEST_USER", "postgres") if os.getuid() == 0 else None
        if self.user:
            shutil.chown(self.dir, self.user)
        self.server_user = os.environ.get("PGUSER", "postgres")
        with open(os.path.join(self.dir, "userlist.txt"), "w") as userlist:
            userlist.write('"%s" ""\n' % self.server_user)
        self.log = os.path.join(self.dir, "pgbouncer.log")
        self.port = None
        self.session_entries = dict(session_entries or {})
        self.entries = dict(entries or {})
        self.settings = dict(settings or {})
        for _ in range(3):
            self.port = _free_port()
            self._write_ini(round_robin, pool_size)
            if self._start():
                return
        raise RuntimeError("pgbouncer did not start: %s" % self._log_tail())

    def _write_ini(self, round_robin, pool_size, host=None, port=None):
        self._settings = (round_robin, pool_size)
        server = "host=%s port=%s user=%s" % (host or os.environ.get("PGHOST", "127.0.0.1"),
                                              port or os.environ.get("PGPORT", "5432"), self.server_user)
        settings = {
            "listen_addr": "127.0.0.1",
            "listen_port": self.port,
            "unix_socket_dir": self.dir,
            "auth_type": "trust",
            "auth_file": os.path.join(self.dir, "userlist.txt"),
            "admin_users": self.server_user,
            "pool_mode": self.pool_mode,
            "default_pool_size": pool_size,
            "max_client_conn": 200,
            "server_round_robin": 1 if round_robin else 0,
            "logfile": self.log,
            # What drivers may send at startup that pgbouncer does not track.
            "ignore_startup_parameters": "extra_float_digits",
            **self.settings,
        }
        with open(os.path.join(self.dir, "pgbouncer.ini"), "w") as ini:
            ini.write("[databases]\n")
            for name, database in self.session_entries.items():
                ini.write("%s = %s dbname=%s pool_mode=session\n" % (name, server, database))
            for name, conninfo in self.entries.items():
                ini.write("%s = %s user=%s\n" % (name, conninfo, self.server_user))
            ini.write("* = %s\n\n[pgbouncer]\n" % server)
            ini.writelines("%s = %s\n" % item for item in settings.items())

    def _start(self):
        account = pwd.getpwnam(self.user) if self.user else None
        self.process = subprocess.Popen(
            [self.program, os.path.join(self.dir, "pgbouncer.ini")], cwd=self.dir,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            user=account.pw_uid if account else None, group=account.pw_gid if account else None)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False  # the port was taken meanwhile, or a bad setting: see the log
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        self.stop()
        return False

    def _log_tail(self):
        try:
            with open(self.log) as log:
                return "".join(log.readlines()[-5:])
        except OSError:
            return "no log"

    def dsn(self, conninfo):
        """`conninfo` (a libpq conninfo string naming the database, "dbname=..."), through this
        pgbouncer's Unix socket."""
        return "%s host=%s port=%d user=%s" % (conninfo, self.dir, self.port, self.server_user)

    def url(self, conninfo):
        """The same as a postgresql:// URL, for asyncpg and node."""
        dbname = dict(part.split("=", 1) for part in conninfo.split())["dbname"]
        return "postgresql://%s@/%s?host=%s&port=%d" % (self.server_user, dbname, self.dir, self.port)

    def warm(self, conninfo, connections=2):
        """Opens `connections` server connections to the database (concurrent transactions),
        left idle in the pool, so that round_robin takes effect from the next transaction on."""
        import psycopg
        clients = [psycopg.connect(self.dsn(conninfo), prepare_threshold=None)
                   for _ in range(connections)]
        try:
            pids = {c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in clients}  # each in a transaction
            assert len(pids) == connections, pids
            for c in clients:
                c.commit()  # a client leaving in a transaction would take its server with it
        finally:
            for c in clients:
                c.close()

    def retarget(self, host, port, conninfo):
        """Points every database entry at another server and reloads (SIGHUP), as an operator
        does after a failover; returns once a new client of `conninfo` reaches it."""
        import signal
        import psycopg
        self._write_ini(*self._settings, host=host, port=port)
        self.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while True:
            with psycopg.connect(self.dsn(conninfo), autocommit=True, prepare_threshold=None) as probe:
                if probe.execute("SELECT current_setting('port')::int").fetchone()[0] == port:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("pgbouncer did not reach port %d after RELOAD" % port)
            time.sleep(0.05)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
