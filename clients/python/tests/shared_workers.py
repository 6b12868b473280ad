"""Worker processes for tests/test_shared.py, tests/test_shared_modes.py and tests/test_citus.py:
each follows indexes through shared copies (a SharedIndexFollower, SharedMultiIndexFollower,
SharedShardedIndexFollower, SharedAsyncIndexFollower or SharedCitusIndexFollower: the mode) and
obeys commands from a pipe, while a thread of its own checks, without pause, every key the test
says it committed. A "false negative" is an answer False for a key committed before the time the
answer is as of (the oldest of the follower's copies' last refreshes as their writers published
them): the one thing a follower must never do. Workers, in the test's process, starts them
(spawned) and speaks to them."""

import asyncio
import multiprocessing
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bloomfilter import shared  # noqa: E402


class _View:
    """What a worker asks of its follower: `parts`, the followers of each copy (each with
    writer, _refreshed_at and stats()), and `follower`, which answers."""

    def __init__(self, follower, parts):
        self.follower, self.parts = follower, parts

    def as_of(self):
        times = [part._refreshed_at for part in self.parts]
        return None if None in times else min(times)

    def contains_many(self, keys):
        return self.follower.contains_many(keys)

    def contains(self, key):
        return self.follower.contains(key)

    def writers(self):
        return [part.writer for part in self.parts]

    def generations(self):
        return tuple(part.stats()["generation"] for part in self.parts)

    def stats(self):
        return [part.stats() for part in self.parts]

    def close(self):
        self.follower.close()


class _MultiView(_View):
    """A SharedMultiIndexFollower: a key "t<k>-..." is one of the k-th index's."""

    def __init__(self, follower, names):
        _View.__init__(self, follower, [follower.index(name) for name in names])

    def _index(self, key):
        return self.parts[int(key[1:key.index("-")])]

    def contains_many(self, keys):
        return [self._index(key).contains(key) for key in keys]

    def contains(self, key):
        return self._index(key).contains(key)


class _AsyncView(_View):
    """A SharedAsyncIndexFollower on an event loop of its own thread."""

    def __init__(self, options, interval, max_lag):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        if options.get("driver") == "asyncpg":
            import asyncpg
            conn = lambda: asyncpg.connect(options["url"])  # noqa: E731
        else:
            import psycopg
            conn = lambda: psycopg.AsyncConnection.connect(options["dsn"], autocommit=True)  # noqa: E731
        follower = shared.SharedAsyncIndexFollower(conn, options["index"], path=options.get("path"),
                                                   directory=options.get("directory"),
                                                   interval=interval, max_lag=max_lag)
        asyncio.run_coroutine_threadsafe(follower.start(), self.loop).result(60)
        _View.__init__(self, follower, [follower])

    def close(self):
        future = asyncio.run_coroutine_threadsafe(self.follower.aclose(), self.loop)
        try:
            future.result(20)
        except Exception:
            import faulthandler
            faulthandler.dump_traceback(all_threads=True)
            for task in asyncio.all_tasks(self.loop):
                task.print_stack()
            raise
        self.loop.call_soon_threadsafe(self.loop.stop)


class _CitusView(_View):
    """A SharedCitusIndexFollower: its parts are the shard indexes of the moment (by node and
    name), and its answers are as of the older of its listing and their copies."""

    def __init__(self, follower):
        self.follower = follower

    @property
    def parts(self):
        nodes = sorted(self.follower.nodes, key=lambda node: (node.host, node.port))
        return [node.follower.indexes[name] for node in nodes
                for name in sorted(node.follower.indexes)]

    def as_of(self):
        listed = self.follower._listed_at
        times = [part._refreshed_at for part in self.follower._active]
        return None if listed is None or None in times else min([listed] + times)


def _view(mode, options, interval, max_lag):
    if mode == "single":
        follower = shared.SharedIndexFollower(options["dsn"], options["index"],
                                              path=options.get("path"),
                                              directory=options.get("directory"),
                                              interval=interval, max_lag=max_lag)
        return _View(follower, [follower])
    if mode == "multi":
        follower = shared.SharedMultiIndexFollower(options["dsn"], options["indexes"],
                                                   directory=options["directory"],
                                                   interval=interval, max_lag=max_lag)
        return _MultiView(follower, options["indexes"])
    if mode == "sharded":
        follower = shared.SharedShardedIndexFollower(options["dsns"], options["index"],
                                                     directory=options["directory"],
                                                     interval=interval, max_lag=max_lag)
        return _View(follower, follower.followers)
    if mode == "async":
        return _AsyncView(options, interval, max_lag)
    if mode == "citus":
        return _CitusView(shared.SharedCitusIndexFollower(
            options["coordinator"], options["index"], directory=options["directory"],
            interval=interval, shards_interval=options["shards_interval"], max_lag=max_lag))
    raise ValueError(mode)


def run(pipe, mode, options, interval, max_lag):
    view = _view(mode, options, interval, max_lag)
    committed = {}               # key: time.monotonic() once its COMMIT had returned
    false_negatives = []
    counts = {"checks": 0, "rounds": 0, "generations": set()}
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            items = list(committed.items())
            if not items:
                time.sleep(0.001)
                continue
            # What the answers are as of, read before them: the bits then seen hold at least
            # every key committed before it.
            as_of = view.as_of()
            answers = view.contains_many([key for key, _ in items])
            single = view.contains(items[-1][0])
            counts["checks"] += len(items) + 1
            counts["rounds"] += 1
            counts["generations"].add(view.generations())
            for (key, at), answer in zip(items, answers):
                if not answer and as_of >= at:
                    false_negatives.append((key, at, as_of))
            if not single and as_of >= items[-1][1]:
                false_negatives.append((items[-1][0], items[-1][1], as_of))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    pipe.send(("ready", os.getpid(), view.writers()))
    while True:
        command, argument = pipe.recv()
        if command == "commit":
            committed.update(argument)
            pipe.send(None)
        elif command == "ask":
            as_of = view.as_of()
            pipe.send((as_of, view.contains_many(argument), view.writers(), view.stats()))
        elif command == "stop":
            stop.set()
            watcher.join()
            view.close()
            pipe.send((false_negatives[:20], len(false_negatives), counts["checks"],
                       counts["rounds"], sorted(g for g in counts["generations"] if None not in g)))
            return


def manual(pipe, dsn, index, path, interval, max_lag):
    """A follower without its thread until told to start it, obeying commands from a pipe: so
    that a test orders the followers' steps across processes."""
    follower = shared.SharedIndexFollower(dsn, index, path=path, interval=interval, max_lag=max_lag,
                                   background=False)
    pipe.send(("ready", os.getpid(), follower.writer))
    while True:
        command, argument = pipe.recv()
        if command == "refresh":
            follower.refresh()
        elif command == "start":
            follower.start()
        elif command in ("die_after_publish", "stop_after_publish"):
            # Once its next generation is named, before it retires any, the process is killed
            # (SIGKILL), or stops (SIGSTOP) until the test lets it go on.
            publish = shared._Store._publish
            sent = signal.SIGKILL if command == "die_after_publish" else signal.SIGSTOP

            def publish_then_signal(store, number):
                publish(store, number)
                shared._Store._publish = publish
                os.kill(os.getpid(), sent)
            shared._Store._publish = publish_then_signal
        elif command == "close":
            follower.close()
        if command == "ask":
            pipe.send((follower._refreshed_at, follower.contains_many(argument), follower.writer,
                       follower.stats()))
        else:
            pipe.send((follower.writer, follower.stats()["generation"]))
        if command == "close":
            return


class Workers:
    """Processes (multiprocessing, spawn) each running run(mode, options) above."""

    def __init__(self, mode, options, interval, max_lag):
        self.args = (mode, options, interval, max_lag)
        self.interval = interval
        self.context = multiprocessing.get_context("spawn")
        self.workers = {}   # pid: (process, pipe)
        self.committed = {}

    def start(self, count=1):
        """The pids of `count` new workers, each told the keys committed so far."""
        started = []
        for _ in range(count):
            mine, theirs = self.context.Pipe()
            process = self.context.Process(target=run, args=(theirs,) + self.args, daemon=True)
            process.start()
            assert mine.poll(60), "a worker did not start"
            _, pid, _ = mine.recv()
            self.workers[pid] = (process, mine)
            started.append(pid)
            if self.committed:
                self.call(pid, "commit", self.committed)
        return started

    def call(self, pid, command, argument=None):
        _, pipe = self.workers[pid]
        pipe.send((command, argument))
        assert pipe.poll(60), "worker %d did not answer %s" % (pid, command)
        return pipe.recv()

    def commit(self, keys_at):
        self.committed.update(keys_at)
        for pid in self.workers:
            self.call(pid, "commit", keys_at)

    def roles(self):
        """{pid: [whether it writes each of its copies]}."""
        return {pid: self.call(pid, "ask", [])[2] for pid in self.workers}

    def writers(self):
        """The pids writing at least one copy."""
        return [pid for pid, roles in self.roles().items() if any(roles)]

    def kill(self, pid):
        process, pipe = self.workers.pop(pid)
        os.kill(pid, signal.SIGKILL)
        process.join(10)
        pipe.close()

    def wait_all_true(self, since, timeout):
        """Waits until every worker's answers are as of a time after `since` (time.monotonic()),
        then asserts every committed key answers True there; the seconds it took."""
        deadline = time.monotonic() + timeout
        keys = list(self.committed)
        for pid in self.workers:
            while True:
                as_of, answers, _, stats = self.call(pid, "ask", keys)
                if as_of is not None and as_of > since:
                    missing = [k for k, a in zip(keys, answers) if not a]
                    assert not missing, (pid, missing[:5], stats)
                    break
                assert time.monotonic() < deadline, ("worker %d still as of %s, before the "
                                                     "commits at %.2f" % (pid, as_of, since), stats)
                time.sleep(self.interval)
        return time.monotonic() - since

    def stop(self):
        results = {}
        for pid in list(self.workers):
            results[pid] = self.call(pid, "stop")
            process, _ = self.workers.pop(pid)
            process.join(10)
        return results
