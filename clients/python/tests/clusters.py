"""Throwaway clusters of the tests' own (a server to stop, several shards), beside the one
test/run-python.sh starts: initdb with an explicit encoding and locale, a free port on
127.0.0.1, a Unix socket in the cluster's directory. As root, the server runs as
$BLOOM_TEST_USER (postgres), as bench/cluster.sh does."""

import os
import shutil
import socket
import subprocess
import tempfile


def _bindir():
    if os.environ.get("PG_BIN"):
        return os.environ["PG_BIN"]
    pg_config = os.environ.get("PG_CONFIG", "pg_config")
    return subprocess.run([pg_config, "--bindir"], check=True, capture_output=True,
                          text=True).stdout.strip()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, name):
        self.bindir = _bindir()
        root = os.environ.get("CLUSTER_ROOT") or None
        self.dir = tempfile.mkdtemp(prefix="python-%s-" % name, dir=root)
        os.chmod(self.dir, 0o755)
        self.user = os.environ.get("BLOOM_TEST_USER", "postgres") if os.getuid() == 0 else None
        if self.user:
            shutil.chown(self.dir, self.user)
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "--no-sync",
                  "--encoding=UTF8", "--locale=C.UTF-8")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write("listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"
                       "fsync = off\nmax_connections = 30\nshared_buffers = 32MB\n" % self.dir)
        self.port = None
        self.start()

    @classmethod
    def standby_of(cls, primary, name, address):
        """A streaming standby of `primary` (pg_basebackup -R: the same system identifier and
        OIDs) listening on `address` at the primary's port, as the same server would on
        another host."""
        standby = cls.__new__(cls)
        standby.bindir, standby.user, standby.port = primary.bindir, primary.user, primary.port
        standby.dir = tempfile.mkdtemp(prefix="python-%s-" % name,
                                       dir=os.environ.get("CLUSTER_ROOT") or None)
        os.chmod(standby.dir, 0o755)
        if standby.user:
            shutil.chown(standby.dir, standby.user)
        standby.data = os.path.join(standby.dir, "data")
        standby._run("pg_basebackup", "-D", standby.data, "-h", primary.dir, "-p",
                     str(primary.port), "-U", "postgres", "-X", "stream", "-R", "-c", "fast")
        with open(os.path.join(standby.data, "postgresql.conf"), "a") as conf:
            conf.write("listen_addresses = '%s'\nunix_socket_directories = '%s'\n"
                       % (address, standby.dir))
        standby.start()
        return standby

    def _run(self, program, *args):
        command = [os.path.join(self.bindir, program), *args]
        if self.user:
            command = ["runuser", "-u", self.user, "--"] + command
        subprocess.run(command, check=True, cwd=self.dir, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)

    def start(self):
        for _ in range(3):
            port = self.port or _free_port()
            try:
                self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"),
                          "-o", "-p %d" % port, "-w", "-t", "60", "start")
                self.port = port
                return
            except subprocess.CalledProcessError:
                if self.port:
                    raise
        raise RuntimeError("could not start the cluster in %s" % self.dir)

    def stop(self, mode="fast"):
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def dsn(self, dbname="postgres"):
        return "host=%s port=%d user=postgres dbname=%s" % (self.dir, self.port, dbname)

    def remove(self):
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
