"""One copy of a followed index's filter per host, shared by the processes following it.

    from bloomfilter.shared import SharedIndexFollower
    follower = SharedIndexFollower(dsn, "users_email_bloom", max_lag=5)
    if not follower.contains(email):   # no round trip, and no copy of the filter in this process
        ...

Every process of one user following the same index (the same server, database, role and
schema-qualified index) with a SharedIndexFollower answers from one copy of the filter, kept in
files under $XDG_RUNTIME_DIR or /dev/shm (or `path`) that each process maps. One of them, the
writer, holds the lock file (fcntl.flock) and follows the index as IndexFollower does: it writes
the pages of bits it fetches into the mapping in place, and after each successful refresh
publishes when that refresh started. The others, readers, hold no connection: each answers from the mapping, as of
the last refresh the writer published. When the writer dies, the kernel releases its lock and
the next reader to try takes it over (every `interval` seconds). It goes on from the generation
it maps, asking the pages changed since the LSN the last writer published with its time, when
that LSN holds on the server it reaches (the same postmaster, and no later than the WAL flushed
there: _adopt), else it reads the filter whole.

Within a generation, a page is overwritten with the server's current page, which holds every
key committed until then (a REINDEX that keeps the layout may drop deleted rows' bits): a reader
that sees a page half-written, each byte old or new, still finds every key committed before the
time its answers are as of. Anything that changes the layout (the first load, another index
under the name, a new layer, a reconnection, a takeover that cannot go on) writes a new
generation file whole, then names it in the control file (`current`, replaced by a rename),
marks every other one retired and unlinks it (a new writer does so too for what a dead one
left); a reader maps a generation only once it is named, so it never answers from a torn layout,
and remaps when it sees its generation retired or another one named.

max_lag bounds every reader's "absent" as IndexFollower's does: past it (the writer is dead and
no one took over, or the server is down) contains() answers True. The monotonic clock the times
are kept in is the host's (CLOCK_MONOTONIC), the same in every process. The time is published
under a sequence lock whose memory fences (the compiled module's, bloomfilter._native.fence) keep
a refresh's bits visible before its time on any CPU; without the compiled module, x86 needs none,
and on any other CPU the follower is refused (RuntimeError).

The directory (by default bloomfilter-<digest of the index's identity> in $XDG_RUNTIME_DIR when
that is a directory of the user's, mode 0700, else <digest> in /dev/shm/bloomfilter-<uid>, made
0700 and kept) and its files are the user's, mode 0700 and 0600; a directory or file of another
user, open to others or a symbolic link is refused (PermissionError; for the default directory's
parent, which another user could make first, the error says to give path=). The last follower
to close (or whose process exits) removes the directory; a process killed leaves it to the next
one that closes.

Forking servers: a follower made before a fork (gunicorn --preload) is a reader in the children,
which share the parent's mapping; made after, each process maps the files. The child never
inherits the writer's role.

The other followers have the same mode, each copy with a store and a writer of its own:
SharedMultiIndexFollower (MultiIndexFollower's indexes on one connection: a process may write
one index's copy and read another's, and holds its connection only while it writes one),
SharedShardedIndexFollower (a SharedIndexFollower per shard; the identity includes the server,
its system identifier and the address and port it accepted the connection on, so shards with
the same database, OID and index name never share a copy, even behind one pooler address) and
SharedAsyncIndexFollower (the writer reads through the async connection, psycopg's or
asyncpg's; a new async writer goes on from the generation it maps, as a sync one) and
SharedCitusIndexFollower (a copy per
shard index of a Citus table, its store opened as the listing adds its placement and closed as
it drops it). Given `directory`, each copy's directory is made in it, named from its identity;
followers of one index in one directory share its copy whatever their class.
"""

import asyncio
import atexit
import errno
import fcntl
import hashlib
import json
import mmap
import os
import platform
import stat
import struct
import tempfile
import threading
import time
import weakref

from . import follow
from ._core import FORMAT_VERSION_LAYERED, HEADER_BYTES, MAGIC, Filter, LayeredFilter
from .follow import (_CURRENT_LSN, MultiIndexFollower, ShardedIndexFollower, _Connected, _Index,
                     _SharedIndex, _text)
from .follow_async import AsyncIndexFollower
from .citus import CitusIndexFollower, _NodeFollower

__all__ = ["SharedIndexFollower", "SharedMultiIndexFollower", "SharedShardedIndexFollower",
           "SharedAsyncIndexFollower", "SharedCitusIndexFollower", "default_path"]

_log = follow._log

# A generation file: a header page, the description of the index (JSON) and, from filter_offset
# (a multiple of the page size), the filter in the portable byte format.
_GENERATION_MAGIC = b"BFSHARE2"
# magic, seq (odd while the writer changes the fields after it; in the host's byte order, read and
# written as one word: _load_seq), refreshed_at (time.monotonic() at the start of the last
# successful refresh), refreshed_wall (time.time() then), retired (1 once another generation is
# current), writer pid, filter_offset, filter_length, meta_length, and the LSN and server's start
# a new writer may go on from (0, 0: none; SharedIndexFollower._position).
_HEADER = struct.Struct("<8sQddQQQQQQq")
_STATE = struct.Struct("<ddQQ")  # refreshed_at .. writer pid, at offset 16
_POSITION = struct.Struct("<Qq")  # LSN, the server's start (µs), at offset 72
_PAGE = mmap.ALLOCATIONGRANULARITY


# The sequence lock's memory fence. The compiled module's is a real fence (C++'s
# atomic_thread_fence, seq_cst) on any CPU; without it, x86's memory ordering (TSO: stores are seen
# in the order they were made, loads are made in program order) needs none, each access being a
# call of its own that the compiler does not reorder; on another CPU (ARM64, POWER, RISC-V) Python
# has no fence, and a follower is refused.
try:
    from ._native import fence as _native_fence
except ImportError:  # not built (or built before it had one)
    _native_fence = None

_TOTAL_STORE_ORDER = ("x86_64", "amd64", "i386", "i486", "i586", "i686", "x86")


def _no_fence():
    pass


def _choose_fence(native_fence, machine):
    """The fence to use: the compiled one, else a no-op on x86, else None (none to be had)."""
    if native_fence is not None:
        return native_fence
    if machine.lower() in _TOTAL_STORE_ORDER:
        return _no_fence
    return None


_fence = _choose_fence(_native_fence, platform.machine())


def _boot_id():
    """This boot's identity: a monotonic time is the host's only within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


class _MappedFilter(Filter):
    """A Filter reading its bytes in place from a mapping (no copy)."""
    __slots__ = ()
    _own = staticmethod(lambda data: data)


class _MappedLayeredFilter(LayeredFilter):
    """A LayeredFilter reading its bytes in place from a mapping (no copy)."""
    __slots__ = ()
    _own = staticmethod(lambda data: data)


def _mapped_filter(buffer):
    """The filter of a mapping's bytes (validated as Filter.from_bytes does)."""
    if len(buffer) >= HEADER_BYTES and buffer[:4] == MAGIC and buffer[4] == FORMAT_VERSION_LAYERED:
        return _MappedLayeredFilter(buffer)
    return _MappedFilter(buffer)


def _refuse(what, why, hint=""):
    raise PermissionError("bloomfilter shared follower: refusing %s: %s%s" % (what, why, hint))


def _check_owned(st, what, hint=""):
    if st.st_uid != os.geteuid():
        _refuse(what, "it belongs to uid %d, not to this process's user (uid %d)"
                % (st.st_uid, os.geteuid()), hint)
    if st.st_mode & 0o077:
        _refuse(what, "other users may access it (mode %o; 0700 for the directory and 0600 for "
                      "its files expected)" % stat.S_IMODE(st.st_mode), hint)


# Where the user's directory of shared copies is made when $XDG_RUNTIME_DIR is not the user's.
_SHARED_MEMORY = "/dev/shm"


def default_path(identity):
    """The directory of an index's shared copy, named from a digest of the index's identity: in
    $XDG_RUNTIME_DIR when it is set to a directory of the user's, mode 0700 (/run/user/<uid>, a
    tmpfs no other user reaches); else in the user's directory bloomfilter-<uid> under /dev/shm
    (else under the temporary directory), made here (mode 0700) and refused (PermissionError)
    when it is another user's (who may have made it first), open to others or not a directory."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]
    runtime = _runtime_directory()
    if runtime is not None:
        return os.path.join(runtime, "bloomfilter-%s" % digest)
    return os.path.join(_user_directory(), digest)


def _runtime_directory():
    """$XDG_RUNTIME_DIR if it is an absolute path to a directory (not a symbolic link) of this
    process's user that no one else may access, else None."""
    path = os.environ.get("XDG_RUNTIME_DIR")
    if not path or not os.path.isabs(path):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return path


def _user_directory():
    """bloomfilter-<uid> under /dev/shm (else the temporary directory), made if need be, and
    checked: this user's, a directory, mode 0700. Another local user could make it first (the
    name is known): that blocks the default directory, and is refused."""
    base = _SHARED_MEMORY
    if not (os.path.isdir(base) and os.access(base, os.W_OK)):
        base = tempfile.gettempdir()
    path = os.path.join(base, "bloomfilter-%d" % os.geteuid())
    hint = ("; another user may have made it to block this one's default directory: give the "
            "follower one with path= (or set XDG_RUNTIME_DIR to a directory of the user's, mode "
            "0700)")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        _refuse(path, "it is not a directory (a symbolic link?)", hint)
    _check_owned(st, path, hint)
    return path


class _Generation:
    """One mapped generation file: the header's fields (under a sequence lock) and the filter."""

    def __init__(self, number, header, data, meta, writable):
        self.number = number
        self.header = header    # mmap of the header page
        self.data = data        # mmap of the filter's bytes
        self.meta = meta
        self.writable = writable

    def read(self):
        """(refreshed_at, refreshed_wall, retired, writer pid), as one consistent set."""
        return _read_state(self.header)

    def write(self, refreshed_at, refreshed_wall, retired=0, position=None):
        _write_state(self.header, refreshed_at, refreshed_wall, retired, position)


def _load_seq(header):
    """The header's seq, read in one aligned 8-byte load (struct's reads a byte at a time)."""
    with memoryview(header) as view, view[8:16] as word, word.cast("Q") as seq:
        return seq[0]


def _store_seq(header, value):
    """Writes the header's seq in one aligned 8-byte store."""
    with memoryview(header) as view, view[8:16] as word, word.cast("Q") as seq:
        seq[0] = value


# The sequence lock: the writer makes seq odd, writes the fields, makes it even again; a reader
# takes the fields read between two equal even loads of seq. The fences make it hold on CPUs that
# reorder memory accesses (ARM64): the writer's first orders the filter's bytes it wrote in place
# (and the fields' old values) before seq turns odd, so a reader that sees a refresh's time sees
# that refresh's bits; a reader's order its loads of seq and of the fields (and its later loads
# of the filter's bytes after the first load of seq).

def _read_state(header, position=False, tries=10000):
    """(refreshed_at, refreshed_wall, retired, writer pid), and with position the LSN and
    server's start a new writer may go on from, read as one consistent set."""
    for _ in range(tries):
        before = _load_seq(header)
        _fence()
        if before & 1 == 0:
            fields = _STATE.unpack_from(header, 16)
            if position:
                fields += _POSITION.unpack_from(header, 72)
            _fence()
            after = _load_seq(header)
            if before == after:
                return fields
        time.sleep(0)
    # A writer died while it wrote them: as of no time, and retired (look for a newer one).
    return (float("-inf"), 0.0, 1, 0) + ((0, 0) if position else ())


def _write_state(header, refreshed_at, refreshed_wall, retired, position=None):
    seq = _load_seq(header)
    seq += 1 if seq & 1 == 0 else 2  # odd while the fields change (even if a writer died so)
    _fence()  # the filter's bytes written in place before
    _store_seq(header, seq)
    _fence()
    _STATE.pack_into(header, 16, refreshed_at, refreshed_wall, retired, os.getpid())
    if position is not None:
        _POSITION.pack_into(header, 72, *position)
    _fence()
    _store_seq(header, seq + 1)


class _Store:
    """The directory of a shared copy: `lock` (the writer's), `users` (each follower holds a
    shared lock on it: the last one to close removes the directory), `current` (the current
    generation's number, replaced by a rename), `gen-N` and, while one is written, `tmp-...`."""

    def __init__(self, path, identity):
        if _fence is None:
            raise RuntimeError(
                "bloomfilter shared follower: this CPU (%s) may reorder memory accesses, and the "
                "shared copy's sequence lock needs a memory fence, which Python has not: build the "
                "compiled module bloomfilter._native (a C++ compiler and python3-dev; "
                "bloomfilter.accelerator()), or use an IndexFollower" % platform.machine())
        self.path = path
        self.identity = identity
        self.boot_id = _boot_id()
        self.lock_fd = self.users_fd = None
        for _ in range(100):
            if self._enter():
                return
        raise RuntimeError("%s: removed by the last follower again and again" % path)

    def _enter(self):
        """Opens the directory (made if need be) and holds `users` shared: True, or False when
        the last follower of the copy removed the directory meanwhile (try again)."""
        path = self.path
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        try:
            self.dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                _refuse(path, "it is not a directory (a symbolic link?)")
            if error.errno == errno.ENOENT:
                return False
            raise
        try:
            st = os.fstat(self.dir_fd)
            if not stat.S_ISDIR(st.st_mode):
                _refuse(path, "it is not a directory")
            _check_owned(st, path)
            try:
                self.users_fd = self._open("users", os.O_RDWR, create=True)
            except FileNotFoundError:  # the directory was removed after it was opened
                os.close(self.dir_fd)
                return False
            # Waits while the last follower removes the copy (it holds the lock exclusively),
            # then checks that what it waited on is still there.
            fcntl.flock(self.users_fd, fcntl.LOCK_SH)
            try:
                still = (os.stat("users", dir_fd=self.dir_fd, follow_symlinks=False).st_ino
                         == os.fstat(self.users_fd).st_ino
                         and os.stat(path, follow_symlinks=False).st_ino == st.st_ino)
            except FileNotFoundError:
                still = False
            if not still:
                os.close(self.users_fd)
                os.close(self.dir_fd)
                self.users_fd = None
                return False
        except BaseException:
            if self.users_fd is not None:
                os.close(self.users_fd)
                self.users_fd = None
            os.close(self.dir_fd)
            raise
        return True

    def _open(self, name, flags, create=False):
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        if create:
            flags |= os.O_CREAT
        try:
            fd = os.open(name, flags, 0o600, dir_fd=self.dir_fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                _refuse(os.path.join(self.path, name), "it is a symbolic link")
            raise
        try:
            st = os.fstat(fd)
            what = os.path.join(self.path, name)
            if not stat.S_ISREG(st.st_mode):
                _refuse(what, "it is not a regular file")
            _check_owned(st, what)
        except BaseException:
            os.close(fd)
            raise
        return fd

    # -- the writer's lock -----------------------------------------------------------------

    def try_lock(self):
        """True if this process now holds the writer's lock (or already did)."""
        if self.lock_fd is None:
            self.lock_fd = self._open("lock", os.O_RDWR, create=True)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def drop_lock(self):
        """Closes the lock file: releases the writer's lock, unless a forked process shares it
        (the child of a writer calls this to forget a lock that stays its parent's)."""
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    # -- generations -----------------------------------------------------------------------

    def current_number(self):
        """The current generation's number, or None."""
        try:
            fd = self._open("current", os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            text = os.read(fd, 4096)
        finally:
            os.close(fd)
        try:
            return int(json.loads(text)["generation"])
        except (ValueError, KeyError, TypeError):
            return None

    def open_generation(self, number, writable=False):
        """The generation `number` mapped (read-only for a reader), or None if it is gone (a
        newer one replaced it meanwhile) or not this index's copy."""
        try:
            fd = self._open("gen-%d" % number, os.O_RDWR if writable else os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return self._map(fd, number, writable)
        finally:
            os.close(fd)

    def _map(self, fd, number, writable):
        head = os.pread(fd, _HEADER.size, 0)
        if len(head) < _HEADER.size:
            raise ValueError("%s/gen-%d: truncated" % (self.path, number))
        magic, _, _, _, _, _, offset, length, meta_length, _, _ = _HEADER.unpack(head)
        if magic != _GENERATION_MAGIC or offset % _PAGE or os.fstat(fd).st_size != offset + length:
            raise ValueError("%s/gen-%d: not a shared filter's generation" % (self.path, number))
        meta = json.loads(os.pread(fd, meta_length, _HEADER.size))
        if meta.get("identity") != self.identity:
            raise ValueError("%s holds the filter of %r, not of %r: give each index a path of its "
                             "own" % (self.path, meta.get("identity"), self.identity))
        if meta.get("boot_id") != self.boot_id:
            return None  # a copy from before a reboot: its times mean nothing now
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        header = mmap.mmap(fd, _HEADER.size, flags=mmap.MAP_SHARED, prot=prot)
        data = mmap.mmap(fd, length, flags=flags, prot=prot, offset=offset)
        return _Generation(number, header, data, meta, writable)

    def new_generation(self, chunks, meta, refreshed_at, refreshed_wall, build):
        """Writes the filter's bytes, given by `chunks` as (length of the whole, offset, bytes),
        as the next generation, maps it for writing, makes its filter with build(mapping) (which
        validates it) and only then makes it current: (generation, filter)."""
        number = (self.current_number() or 0) + 1
        meta = dict(meta, identity=self.identity, boot_id=self.boot_id)
        meta_bytes = json.dumps(meta).encode()
        offset = -(-(_HEADER.size + len(meta_bytes)) // _PAGE) * _PAGE
        temporary = "tmp-%d-%d" % (os.getpid(), number)
        fd = self._open(temporary, os.O_RDWR | os.O_EXCL, create=True)
        try:
            length, written = None, 0
            for whole, at, piece in chunks:
                if length is None:
                    length = whole
                    os.ftruncate(fd, offset + length)
                if whole != length or at < 0 or at + len(piece) > length:
                    raise ValueError("the filter's chunks do not make one value")
                _write_all(fd, piece, offset + at)
                written += len(piece)
            if length is None or written != length:
                raise ValueError("the filter's chunks do not make one value")
            header = _HEADER.pack(_GENERATION_MAGIC, 0, refreshed_at, refreshed_wall, 0, os.getpid(),
                                  offset, length, len(meta_bytes), 0, 0)
            _write_all(fd, header + meta_bytes, 0)
            generation = self._map(fd, number, writable=True)
            f = build(generation.data)
            os.rename(temporary, "gen-%d" % number, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=self.dir_fd)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)
        self._publish(number)
        return generation, f

    def _publish(self, number):
        temporary = "current.tmp-%d" % os.getpid()
        fd = self._open(temporary, os.O_WRONLY | os.O_TRUNC, create=True)
        try:
            _write_all(fd, json.dumps({"generation": number}).encode(), 0)
        finally:
            os.close(fd)
        os.replace(temporary, "current", src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)

    def retire(self, number):
        """After another generation became current: tells the readers of generation `number`
        (marks it retired), then unlinks its file (the memory goes with the last mapping). While
        any follower is left, no generation file goes otherwise: no reader stays on one gone."""
        name = "gen-%d" % number
        try:
            fd = self._open(name, os.O_RDWR)
        except FileNotFoundError:
            return
        except OSError:
            fd = None  # not a file of ours (refused): unlinked as it is
        if fd is not None:
            try:
                if (os.fstat(fd).st_size >= _HEADER.size
                        and os.pread(fd, len(_GENERATION_MAGIC), 0) == _GENERATION_MAGIC):
                    header = mmap.mmap(fd, _HEADER.size, flags=mmap.MAP_SHARED,
                                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
                    try:
                        at, wall, _, _ = _read_state(header)
                        _write_state(header, at, wall, 1)
                    finally:
                        header.close()
            finally:
                os.close(fd)
        self._unlink(name)

    def _unlink(self, name):
        try:
            os.unlink(name, dir_fd=self.dir_fd)
        except FileNotFoundError:
            pass

    def remove_leftovers(self, keep=None, retire=True):
        """Retires the generations other than `keep` (only unlinks them without `retire`: the
        last follower's, with no one left to look) and unlinks unfinished ones (a writer that
        died): done by the writer, which alone writes here, or by the last follower."""
        for name in os.listdir(self.dir_fd):
            if name.startswith("gen-") and name != "gen-%s" % keep:
                number = name[len("gen-"):]
                if retire and number.isdigit() and name == "gen-%d" % int(number):
                    self.retire(int(number))
                else:
                    self._unlink(name)
            elif name.startswith("tmp-") or name.startswith("current.tmp-"):
                self._unlink(name)

    def close(self):
        """Lets go of the locks; the last follower of the copy on the host removes its data."""
        self.drop_lock()
        if self.users_fd is not None:
            os.close(self.users_fd)
            self.users_fd = None
        try:
            fd = self._open("users", os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # other followers still use it
            else:
                # No follower left (a newcomer waits for this lock, then starts again).
                self._unlink("current")
                self.remove_leftovers(retire=False)
                self._unlink("lock")
                self._unlink("users")
                try:
                    os.rmdir(self.path)
                except OSError:
                    pass  # files of someone else's making: left as they are
            finally:
                os.close(fd)
        except OSError:
            pass
        finally:
            os.close(self.dir_fd)
            self.dir_fd = None


def _write_all(fd, data, offset):
    view = memoryview(data).cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


_IDENTITY = """
SELECT pg_catalog.current_database(), d.oid::bigint, CURRENT_USER::text, n.nspname::text,
       c.relname::text, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),
       pg_catalog.current_setting('port'),
       CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
            THEN (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s) END,
       pg_catalog.inet_server_addr()::text, pg_catalog.inet_server_port()::text,
       pg_catalog.pg_is_in_recovery()::text, pg_catalog.pg_backend_pid()
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
 WHERE c.oid = %s::text::regclass
"""


def _address(conn):
    """(host, port) a connection was made to, as its driver gives them (asyncpg: its address)."""
    info = getattr(conn, "info", None)
    if info is not None:
        return getattr(info, "host", None), str(getattr(info, "port", ""))
    address = getattr(conn, "_addr", None)  # asyncpg's: (host, port), or a Unix socket's path
    if isinstance(address, tuple):
        return str(address[0]), str(address[1])
    if address is None:
        return None, ""
    # As libpq names a Unix socket: its directory, and the port in the file's name.
    directory, name = os.path.split(str(address))
    if name.startswith(".s.PGSQL."):
        return directory, name[len(".s.PGSQL."):]
    return str(address), ""


def _identity_of(index_name, rows, conn):
    """(identity, schema-qualified name) of an index from its _IDENTITY rows: what the followers
    sharing a copy have in common, the server (the address connected to; the server's port,
    system identifier, the address and port it accepted the connection on, and whether it is a
    standby: a pooler's entries for a primary and its standby, or for clones of one cluster on
    other hosts, are one address and one database name), database, role and index."""
    if not rows:
        raise LookupError("index %s not found" % index_name)
    (database, database_oid, role, schema, relation, qualified, server_port, system,
     server_address, accepted_port, standby) = map(_text, rows[0])
    host, port = _address(conn)
    return {"host": host, "port": port, "server_port": server_port, "system": system,
            "server_address": server_address, "accepted_port": accepted_port,
            "standby": standby, "database": database, "database_oid": int(database_oid),
            "role": role, "schema": schema, "index": relation}, qualified


def _store_path(identity, path, directory):
    """The directory of an index's copy: path, else one named from the identity in `directory`
    (made 0700 if need be), else default_path's."""
    if path is not None:
        return path
    if directory is None:
        return default_path(identity)
    os.makedirs(directory, 0o700, exist_ok=True)
    return os.path.join(directory, os.path.basename(default_path(identity)))


def _joined(indexes, started):
    """True once each index's follower writes its copy or maps a generation of it; TimeoutError
    once the first timeout of theirs since `started` (time.monotonic()) has passed."""
    waiting = [index for index in indexes if not index._take_over() and not index._attach()]
    if not waiting:
        return True
    late = [index for index in waiting if time.monotonic() - started > index._timeout]
    if late:
        raise TimeoutError("shared follower of %s: no copy in %s after %s s, and another process "
                           "holds the writer's lock" % (late[0].index_name, late[0].path,
                                                        late[0]._timeout))
    return False


# Followers alive in this process, set up again in a forked child.
_shared_followers = weakref.WeakSet()


def _after_fork_in_child():
    for follower in list(_shared_followers):
        try:
            follower._after_fork()
        except Exception:
            _log.exception("shared follower of %s: could not set up after fork", follower._name)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_at_exit():
    # So that the last process of the host to exit removes the files under /dev/shm.
    for follower in list(_shared_followers):
        if follower._pid == os.getpid():
            try:
                follower._leave()
            except Exception:
                pass


class _SharedCopy(_Index):
    """One index followed through its shared copy (a _Store): the writer's role, the generation
    mapped and the answers from it. The follower gives the connection the writer reads through
    (_query and _filter_chunks, or the async ones), and its connection owner's _closed."""

    def _init_shared(self, timeout):
        self.writer = False
        self.path = None
        self._timeout = timeout
        self._generation = None
        self._store = None
        self._adopting = False
        self._durable = None
        self.adoptions = 0
        self._role_lock = threading.Lock()

    def _open_store(self, rows, conn, path, directory):
        """Opens the index's store, from its _IDENTITY rows; index_name becomes the
        schema-qualified name."""
        identity, qualified = _identity_of(self.index_name, rows, conn)
        self.index_name = qualified
        self._store = _Store(_store_path(identity, path, directory), identity)
        self.path = self._store.path

    # -- roles -----------------------------------------------------------------------------

    def _take_over(self):
        """Takes the writer's lock if it is free; a new writer adopts the generation it maps
        when it can (_adopt), else reads the filter whole."""
        with self._role_lock:
            if self.writer:
                return True
            if self._connection_owner._closed or not self._store.try_lock():
                return False
            self.writer = True
            self._lsn = None
            if self._generation is not None:
                self._reload_reason = "takeover"
                self._adopting = True
            self._store.remove_leftovers(keep=self._store.current_number())
            return True

    def _forget_role(self):
        # In a forked child: the child shares the parent's open lock file, hence its lock: it
        # forgets it (closing its copy, which leaves the parent's lock held) and is a reader of
        # the parent's mapping.
        self._role_lock = threading.Lock()
        self.writer = False
        self._adopting = False
        self._durable = None
        if self._store is not None:
            self._store.drop_lock()

    def _refresh_index(self):
        if self._adopting:
            self._adopting = False
            adoption = self._adoption()
            if adoption is not None:
                self._note_position(force=True)
                self._adopt(*adoption)
        _Index._refresh_index(self)
        self._note_position()

    def _adoption(self):
        """(generation, LSN, server) a new writer may go on from: the current generation, the
        one it maps, where the last writer published it may (its position); None when there is
        none. _adopt then checks that LSN against the server."""
        generation = self._generation
        if generation is None or self._store.current_number() != generation.number:
            return None
        # No one else writes it now: read once (seq odd is a writer killed while it wrote).
        _, _, retired, _, lsn, server = _read_state(generation.header, position=True, tries=1)
        if retired or not lsn or not server:
            return None
        return generation, lsn, server

    def _adopt(self, generation, lsn, server):
        """A new writer goes on from `generation` at `lsn` (_adoption): it maps it for writing
        and asks the changes since that LSN, so the next refresh moves the pages changed since,
        not the whole filter. Only when that LSN means the same here: the position is the
        server's now (the same postmaster: its start time, noted by _note_position just before;
        another server, a standby promoted or a restore, reads the filter whole), and it is no
        later than the WAL the server had flushed when the last writer looked (a crash loses
        unflushed WAL, and the server writes new records at those positions again). The first
        changes check the copy's header and OID as every refresh does (another index, new
        parameters, a new layer: read whole). Leaves _lsn None (read whole) otherwise."""
        if self._durable is None or self._durable[1] != server:
            return
        writable = self._store.open_generation(generation.number, writable=True)
        if writable is None or _read_state(writable.header, True, 1)[4:] != (lsn, server):
            return
        oid, key_type, transform = _key_rules_of(self.index_name, writable.meta["describe"])
        f = _mapped_filter(writable.data)
        self._generation = writable
        self._state = (f, key_type, transform)
        self._oid, self._lsn = oid, _lsn_text(lsn)
        self._reload_reason = None
        self.adoptions += 1
        _log.info("shared follower of %s: took over generation %d, from LSN %s",
                  self.index_name, writable.number, self._lsn)

    def _position_due(self, force):
        """Whether _note_position reads the server's position now: at most once a second, and
        once on each connection."""
        durable = self._durable
        return (force or durable is None or durable[0] != self._connection_owner.backend_pid
                or time.monotonic() - durable[3] >= 1.0)

    def _position_noted(self, rows):
        """Keeps the server's start and flushed WAL position from _POSITION_QUERY's rows (None:
        the query was refused, and a new writer then reads the filter whole)."""
        (server, flushed), = rows or [(0, None)]
        self._durable = (self._connection_owner.backend_pid, int(server or 0), _lsn_int(flushed),
                         time.monotonic())

    def _note_position(self, force=False):
        """Reads the server's start and flushed WAL position (_position_due), for _position and
        _adopt. A query refused (not the connection lost) leaves none."""
        if not self._position_due(force):
            return
        owner = self._connection_owner  # the follower whose connection this index's queries use
        try:
            rows = self._query(_POSITION_QUERY, [])
        except Exception:
            if owner._conn is None or owner._connection_lost():
                raise
            rows = None
        self._position_noted(rows)

    def _position(self):
        """(LSN, server's start) a new writer may go on from: the copy holds every change up to
        the last refresh's LSN, and WAL up to the flushed position read on this connection is
        never written again; (0, 0) when there is none."""
        durable = self._durable
        if (self._lsn is None or durable is None
                or durable[0] != self._connection_owner.backend_pid or not durable[2]):
            return 0, 0
        return min(_lsn_int(self._lsn), durable[2]), durable[1]

    def _close_store(self):
        """Lets another process be the writer; the last follower of the copy on the host removes
        its files."""
        with self._role_lock:
            self.writer = False
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- a reader --------------------------------------------------------------------------

    def _attach(self):
        """Maps the current generation if it is not the one mapped: True when one is mapped."""
        number = self._store.current_number()
        if number is None:
            return False
        if self._generation is not None and self._generation.number == number:
            return True
        generation = self._store.open_generation(number)
        if generation is None:
            return False
        meta = generation.meta
        oid, key_type, transform = _key_rules_of(self.index_name, meta["describe"])
        f = _mapped_filter(generation.data)
        self._generation = generation
        self._state = (f, key_type, transform)
        self._oid, self._lsn = oid, None
        self._reload_reason = meta.get("reason", "reload")
        self._loaded(f, len(generation.data))
        at, wall, _, _ = generation.read()
        self._refreshed(at, wall)
        return True

    def _sync(self):
        """A reader's refresh: as of the writer's last published refresh (its start, not this
        call's), mapping a new generation if there is one."""
        generation, store = self._generation, self._store
        if generation is not None:
            at, wall, retired, _ = generation.read()
            try:
                # Retired, or another one named (a writer killed before it retired the one it
                # replaced leaves it unretired): maps the current one.
                replaced = retired or (store is not None
                                       and store.current_number() != generation.number)
                if replaced:
                    self._attach()
            except Exception as error:
                self.last_error = error
                replaced = True
            if not replaced and at > self._refreshed_at:
                self._refreshed(at, wall)
        else:
            self._attach()
        if self.max_lag is not None and self._refreshed_at is not None and self.lag > self.max_lag:
            if self.last_error is None:
                self.last_error = RuntimeError("the writer of the shared copy has not refreshed "
                                               "it for %.1f s" % self.lag)
            self._stale()

    # -- the writer ------------------------------------------------------------------------

    def _load(self):
        if not self.writer:
            raise AssertionError("only the writer reads the filter")
        started, wall = time.monotonic(), time.time()
        answers = []

        def query(sql, parameters):
            rows = self._query(sql, parameters)
            answers.append(_plain(rows))
            return rows

        oid, key_type, transform = _Index._describe(_Describing(self.index_name, query))
        (lsn,), = self._query(_CURRENT_LSN, [])
        self.last_rows = self.last_bytes = 0
        chunks = self._filter_chunks(oid)
        try:
            self._install(chunks, oid, key_type, transform, lsn, answers, started, wall)
        except BaseException:
            # A query left unread midway leaves its connection busy: closed (as a connection
            # lost), so the next refresh opens another (and reads the filter whole).
            chunks.close()
            conn = self._connection_owner._conn
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
            raise

    def _install(self, chunks, oid, key_type, transform, lsn, answers, started, wall):
        """Makes the filter's bytes (chunks: (its length, offset, bytes)) the next generation,
        current once whole, answers from it and retires every other. The readers take the key
        rules from `answers`, the rows of the queries _describe ran (_key_rules_of)."""
        meta = {"describe": answers, "reason": self._reload_reason or "reload"}
        generation, f = self._store.new_generation(chunks, meta, started, wall, _mapped_filter)
        self._generation = generation
        self._state = (f, key_type, transform)
        self._oid, self._lsn = oid, _text(lsn)
        # Every other generation: the one this process had mapped, and the one `current` named
        # before (after a takeover, the dead writer's, which its readers are on).
        self._store.remove_leftovers(keep=generation.number)
        self._loaded(f, self.last_bytes)

    def _refreshed(self, started, wall):
        _Index._refreshed(self, started, wall)
        generation = self._generation
        if self.writer and generation is not None and generation.writable:
            generation.write(started, wall, position=self._position())

    def stats(self):
        """IndexFollower's stats(), and writer (this process is the writer), generation, path
        and adoptions (takeovers that went on from the current generation, not reading it
        whole)."""
        stats = _Index.stats(self)
        stats.update(writer=self.writer, path=self.path, adoptions=self.adoptions,
                     generation=None if self._generation is None else self._generation.number)
        return stats


class _SharedConnected(_Connected):
    """The connection and thread of followers of shared copies (SharedIndexFollower,
    SharedMultiIndexFollower): a refresh takes the writer's role of each copy whose lock is free,
    refreshes the copies this process writes over the connection and takes in the others from
    their stores. The connection is closed while the process writes none."""

    def _join(self, path, directory):
        """At the start: opens each index's store (path, or named in directory) and waits until
        this process writes it or maps its copy; the copies it writes are read."""
        indexes = self._followed()
        started = time.monotonic()
        try:
            if self._conn is None:
                self._open()
            elif self.backend_pid is None:  # a connection given and not prepared yet
                self._prepare_connection()
            for index in indexes:
                index._open_store(self._query(_IDENTITY, [index.index_name]), self._conn, path,
                                  directory)
            while not _joined(indexes, started):
                time.sleep(min(self.interval, 0.05))
            _Connected.refresh(self)
        except BaseException:
            self._close_connection()
            for index in indexes:
                index._close_store()
            raise
        _shared_followers.add(self)

    def refresh(self):
        """Each copy this process writes: brought up to date (one query). Each other: takes the
        writer's role if it is free, else takes in the writer's last refresh (and maps a new
        generation if there is one)."""
        if self._pid != os.getpid():  # forked where the at-fork handlers did not run
            with follow._restart_lock:
                if self._pid != os.getpid():
                    self._after_fork()
        _Connected.refresh(self)

    def _refresh_locked(self, indexes):
        writers = [index for index in indexes if index._take_over()]
        for index in indexes:
            if not index.writer:
                index._sync()  # as of the writer's refresh, never of this one's start
        if writers:
            _Connected._refresh_locked(self, writers)
        else:
            self._close_connection()  # a reader needs none until it takes over

    def _after_fork(self):
        for index in self._followed():
            index._forget_role()
        _Connected._after_fork(self)

    def close(self):
        """Stops the thread and closes the connection; lets another process be the writer of
        each copy; the last follower of a copy on the host removes its files. contains() still
        answers from the mapping (going stale as IndexFollower's does after close)."""
        _Connected.close(self)
        for index in self._followed():
            index._close_store()

    _leave = close


class SharedIndexFollower(_SharedCopy, _SharedConnected):
    """Follows a bloomfilter index with one copy of its filter per host (see the module's
    documentation): IndexFollower's contains, contains_many, lag, is_fresh, filter, stats,
    refresh and close, and its arguments, and:

    path: the directory of the shared copy (None: one named from the user and the index's
    identity in `directory`, by default under /dev/shm); every follower sharing it must follow
    the same index. timeout: seconds a new follower waits for the writer's first copy before
    raising TimeoutError. conn is used to learn the index's identity, then by the writer: a
    reader closes it once it has mapped the copy, and opens another the same way if it takes
    over.

    The index is the one index_name names when the follower starts, followed by its
    schema-qualified name (index_name becomes that name). Only the writer checks the copy
    against the index's capacity (the "capacity" event); every follower reports "reload" when it
    maps a new generation, and "stale"/"fresh" by its own lag. writer says whether this
    process is the writer now.
    """

    def __init__(self, conn, index_name, path=None, interval=0.1, background=True, max_lag=None,
                 on_event=None, timeout=60.0, directory=None):
        self._init_connection(conn, interval)
        self._init_index(index_name, max_lag, on_event)
        self._init_shared(timeout)
        self._connection_owner = self
        self.name_given = index_name
        self._join(path, directory)
        if background:
            self.start()

    def _followed(self):
        return (self,)

    @property
    def _name(self):
        return self.index_name

    def __repr__(self):
        return "<bloomfilter.shared follower of %s, %s, in %s>" % (
            self.index_name, "writer" if self.writer else "reader", self.path)


class _SharedMultiIndex(_SharedCopy, _SharedIndex):
    """One index of a SharedMultiIndexFollower: its shared copy, read through the follower's
    connection when this process writes it."""

    def __init__(self, follower, index_name, max_lag, on_event):
        _SharedIndex.__init__(self, follower, index_name, max_lag, on_event)
        self._init_shared(follower._timeout)

    def __repr__(self):
        return "<bloomfilter.shared index %s of a SharedMultiIndexFollower, %s, in %s>" % (
            self.index_name, "writer" if self.writer else "reader", self.path)


class SharedMultiIndexFollower(_SharedConnected, MultiIndexFollower):
    """A MultiIndexFollower whose indexes each have one copy per host, as SharedIndexFollower's:

        follower = SharedMultiIndexFollower(dsn, ["users_email_bloom", "orders_ref_bloom"], max_lag=5)
        follower.index("users_email_bloom").contains(email)

    Each index has a store of its own (named from its identity in `directory`, by default under
    /dev/shm) and its own writer: this process may write one index's copy and read another's.
    The copies it writes are refreshed over its one connection and thread, which it closes
    while it writes none. index(name) has SharedIndexFollower's writer, path and stats(). The
    arguments are MultiIndexFollower's, and (by keyword) directory and SharedIndexFollower's
    timeout.
    """

    _index_class = _SharedMultiIndex

    def __init__(self, conn, index_names, interval=0.1, background=True, max_lag=None,
                 on_event=None, *, directory=None, timeout=60.0):
        self._directory = directory
        self._timeout = timeout
        MultiIndexFollower.__init__(self, conn, index_names, interval=interval,
                                    background=background, max_lag=max_lag, on_event=on_event)

    def _first_refresh(self):
        self._join(None, self._directory)

    def _track(self):
        pass  # in _shared_followers (_join)

    def __repr__(self):
        return "<bloomfilter.shared follower of %s>" % self._name


class SharedShardedIndexFollower(ShardedIndexFollower):
    """A ShardedIndexFollower whose shards' followers are SharedIndexFollowers: one copy per
    host of each shard's index, in a store of its own (named from its identity, which includes
    the shard's server, in `directory`, by default under /dev/shm), with its own writer. The
    arguments are ShardedIndexFollower's, and (by keyword) directory and SharedIndexFollower's
    timeout."""

    def __init__(self, conns, index_name, interval=0.1, background=True, max_lag=None,
                 on_event=None, *, directory=None, timeout=60.0):
        self._directory = directory
        self._timeout = timeout
        ShardedIndexFollower.__init__(self, conns, index_name, interval=interval,
                                      background=background, max_lag=max_lag, on_event=on_event)

    def _shard_follower(self, conn, index_name, **options):
        return SharedIndexFollower(conn, index_name, directory=self._directory,
                                   timeout=self._timeout, **options)


def _joined_since(index, started):
    """True once this process writes the index's copy or maps it as of a refresh started after
    `started` (time.monotonic())."""
    if index._take_over():
        return True
    if not index._attach():
        return False
    index._sync()
    return index._refreshed_at is not None and index._refreshed_at > started


class _SharedCitusNode(_SharedConnected, _NodeFollower):
    """The shard indexes of one node of a SharedCitusIndexFollower: a _NodeFollower whose
    indexes each have one copy per host (a SharedMultiIndexFollower's), its store opened as the
    index is added (follow()) and closed once it is dropped."""

    _index_class = _SharedMultiIndex

    def __init__(self, conn, index_names, interval, background, max_lag, on_event, directory,
                 timeout):
        self._directory = directory
        self._timeout = timeout
        _NodeFollower.__init__(self, conn, index_names, interval, background, max_lag, on_event)

    def _first_refresh(self):
        indexes = self._followed()
        refused = self._join_added(indexes)
        try:
            if refused:
                raise refused[0].last_error
            _Connected.refresh(self)
        except BaseException:
            self._leave_indexes(indexes)
            raise
        _shared_followers.add(self)

    def _track(self):
        pass  # in _shared_followers (_first_refresh)

    def _join_added(self, indexes):
        """Opens the stores of indexes about to be followed (on a connection for their identity,
        which the next refresh closes if this process writes no copy) and waits until this
        process writes each, or maps its copy as of a refresh its writer started since this call
        (after the listing that added it: a copy refreshed before, by a process whose listing
        was older, could be of a placement not yet whole); returns the indexes it cannot
        follow (each with its last_error), their stores closed."""
        refused, opened = [], []
        try:
            with self._lock:  # the connection is the thread's too
                for index in indexes:
                    try:
                        if self._conn is None:
                            self._open()
                        index._open_store(self._query(_IDENTITY, [index.index_name]), self._conn,
                                          None, self._directory)
                        opened.append(index)
                    except Exception as error:
                        index.last_error = error
                        refused.append(index)
                        if self._connection_lost():
                            self._close_connection()
            started, waiting = time.monotonic(), opened
            while waiting:
                waiting = [index for index in waiting if not _joined_since(index, started)]
                if waiting and time.monotonic() - started > self._timeout:
                    for index in waiting:
                        index.last_error = TimeoutError(
                            "shared follower of %s: no copy in %s after %s s, and another process "
                            "holds the writer's lock" % (index.index_name, index.path, self._timeout))
                    refused += waiting
                    break
                if waiting:
                    time.sleep(min(self.interval, 0.05))
        except BaseException:
            self._leave_indexes(indexes)
            raise
        self._leave_indexes(refused)
        return refused

    def _leave_indexes(self, indexes):
        # Under the lock: a refresh that took the indexes before they were dropped passes over
        # the closed ones (_refresh_locked).
        with self._lock:
            for index in indexes:
                index._close_store()

    def _refresh_locked(self, indexes):
        _SharedConnected._refresh_locked(self, tuple(index for index in indexes
                                                     if index._store is not None))

    def __repr__(self):
        return "<bloomfilter.shared Citus node follower of %s>" % self._name


class SharedCitusIndexFollower(CitusIndexFollower):
    """A CitusIndexFollower whose shard indexes each have one copy per host, as
    SharedMultiIndexFollower's: each shard index (on each node holding a placement) a store of
    its own, named from its identity (which includes the node's system identifier, host and
    port) in `directory` (by default under /dev/shm), with its own writer. A store is opened when
    the listing adds its placement (waiting, up to `timeout` seconds, until this process writes
    the copy or maps the writer's) and closed when the listing drops it. Each process reads the
    listing itself (its own coordinator connection), and holds a node's connection while it
    writes a copy there. contains(), lag and max_lag are CitusIndexFollower's: a reader's copy
    is as of its writer's last refresh. The arguments are CitusIndexFollower's, and (by keyword)
    directory and SharedIndexFollower's timeout."""

    def __init__(self, coordinator, index_name, interval=0.1, shards_interval=1.0, background=True,
                 max_lag=None, on_event=None, node_conninfo=None, *, directory=None, timeout=60.0):
        self._directory = directory
        self._timeout = timeout
        CitusIndexFollower.__init__(self, coordinator, index_name, interval=interval,
                                    shards_interval=shards_interval, background=background,
                                    max_lag=max_lag, on_event=on_event, node_conninfo=node_conninfo)

    def _node_follower(self, host, port, names):
        return _SharedCitusNode(self._node_connector(host, port), names, self.interval, False,
                                self.max_lag, self._node_event(host, port), self._directory,
                                self._timeout)

    def __repr__(self):
        return "<bloomfilter.shared.SharedCitusIndexFollower of %s: %d shards on %d nodes>" % (
            self.index_name, len(self._placements), len(self._nodes))


class SharedAsyncIndexFollower(_SharedCopy, AsyncIndexFollower):
    """An AsyncIndexFollower with one copy of the index's filter per host, as
    SharedIndexFollower's: the writer follows the index on the async connection (psycopg's
    AsyncConnection or asyncpg) from its task; a reader maps the copy, holds no connection and
    takes in the writer's refreshes from its task (it closes the connection once it has mapped
    the copy, unless it could not open another: an asyncpg connection given as it is). A reader
    that takes over goes on from the generation it maps where it can, as a
    SharedIndexFollower's does, and an async writer publishes the position another may go on
    from. The
    arguments are AsyncIndexFollower's, and (by keyword) SharedIndexFollower's path, directory
    and timeout; `async with` or `await start()`, and `await aclose()`.
    """

    def __init__(self, conn, index_name, interval=0.1, max_lag=None, on_event=None, *,
                 path=None, directory=None, timeout=60.0):
        AsyncIndexFollower.__init__(self, conn, index_name, interval=interval, max_lag=max_lag,
                                    on_event=on_event)
        self._init_shared(timeout)
        self.name_given = index_name
        self._where = (path, directory)
        self._closed = False
        self._pid = os.getpid()

    @property
    def _name(self):
        return self.index_name

    def __repr__(self):
        return "<bloomfilter.shared async follower of %s, %s, in %s>" % (
            self.index_name, "writer" if self.writer else "reader", self.path)

    async def start(self):
        """Opens the store and maps the copy or, as the writer, reads it (if not yet); starts
        the refreshing task on the running loop."""
        if self._store is None:
            started = time.monotonic()
            try:
                if self._conn is None:
                    await self._open()
                if not self._prepared:
                    await self._prepare_connection()
                self._open_store(await self._query(_IDENTITY, [self.index_name]), self._conn,
                                 *self._where)
                while not _joined((self,), started):
                    await asyncio.sleep(min(self.interval, 0.05))
                await self.refresh()
            except BaseException:
                await self._close_connection()
                self._close_store()
                raise
            _shared_followers.add(self)
        return await AsyncIndexFollower.start(self)

    async def refresh(self):
        """The writer: brings the shared copy up to date (one query). A reader: takes the
        writer's role if it is free, else takes in the writer's last refresh."""
        if self._take_over():
            await AsyncIndexFollower.refresh(self)
        else:
            self._sync()  # as of the writer's refresh, never of this one's start
            if self._connect is not None:  # else kept: it could not open another to take over
                await self._close_connection()

    async def _refresh_index(self):
        # _SharedCopy's, with the async connection's queries: a new writer adopts the generation
        # it maps when it can, and the writer notes the server's position for the next one.
        if self._adopting:
            self._adopting = False
            adoption = self._adoption()
            if adoption is not None:
                await self._note_position_async(force=True)
                self._adopt(*adoption)
        await AsyncIndexFollower._refresh_index(self)
        await self._note_position_async()

    async def _note_position_async(self, force=False):
        if not self._position_due(force):
            return
        try:
            rows = await self._query(_POSITION_QUERY, [])
        except Exception:
            if self._conn is None or self._connection_lost():
                raise
            rows = None
        self._position_noted(rows)

    async def _load(self):
        if not self.writer:
            raise AssertionError("only the writer reads the filter")
        started, wall = time.monotonic(), time.time()
        answers = []

        async def query(sql, parameters):
            rows = await self._query(sql, parameters)
            answers.append(_plain(rows))
            return rows

        oid, key_type, transform = await self._describe(query)
        (lsn,), = await self._query(_CURRENT_LSN, [])
        chunks = await self._whole(oid)
        self._install(chunks, oid, key_type, transform, lsn, answers, started, wall)

    async def aclose(self):
        """Stops the task and closes the connection; lets another process be the writer; the
        last follower of the copy on the host removes its files."""
        self._closed = True
        await AsyncIndexFollower.aclose(self)
        self._close_store()

    def _leave(self):
        self._closed = True
        self._close_store()

    def _after_fork(self):
        # The parent's connection and task are not the child's: it is a reader until it
        # refreshes on a loop of its own.
        self._forget_role()
        self._conn, self._prepared, self._lock, self._task = None, False, None, None
        self._lsn = None
        self._pid = os.getpid()


# The server's start (µs since 1970: the same only for the same postmaster) and the WAL written to
# disk (a standby's: replayed), never written again there.
_POSITION_QUERY = (
    "SELECT (EXTRACT(EPOCH FROM pg_catalog.pg_postmaster_start_time()) * 1000000)::bigint, "
    "CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() "
    "ELSE pg_catalog.pg_current_wal_flush_lsn() END::text, pg_catalog.pg_backend_pid()")


def _lsn_int(text):
    """An LSN's text (X/Y) as a number; 0 for None."""
    if not text:
        return 0
    high, low = _text(text).split("/")
    return int(high, 16) << 32 | int(low, 16)


def _lsn_text(number):
    return "%X/%X" % (number >> 32, number & 0xFFFFFFFF)


class _Describing:
    """What IndexFollower's _describe reads of a follower: the index's name and its queries."""

    def __init__(self, index_name, query):
        self.index_name = index_name
        self._query = query


def _key_rules_of(index_name, answers):
    """(OID, key type, key transform) of an index, from the rows the writer's _describe read
    (its queries answered again in the same order, with no connection)."""
    answers = list(answers)

    def query(sql, parameters):
        if not answers:
            raise ValueError("the shared copy's description of %s is incomplete" % index_name)
        return answers.pop(0)

    return _Index._describe(_Describing(index_name, query))


def _plain(rows):
    """Query rows as JSON lists (text columns as str)."""
    if rows is None:
        return None
    return [[_text(value) for value in row] for row in rows]
