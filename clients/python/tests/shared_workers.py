"""Worker processes for tests/test_shared.py: each follows one index through one shared copy
(SharedIndexFollower) and obeys commands from a pipe, while a thread of its own checks, without
pause, every key the test says it committed. A "false negative" is an answer False for a key
committed before the time the answer is as of (the follower's last refresh as the writer
published it): the one thing a follower must never do."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bloomfilter.shared import SharedIndexFollower  # noqa: E402


def run(pipe, dsn, index, path, interval, max_lag):
    follower = SharedIndexFollower(dsn, index, path=path, interval=interval, max_lag=max_lag)
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
            as_of = follower._refreshed_at
            answers = follower.contains_many([key for key, _ in items])
            single = follower.contains(items[-1][0])
            counts["checks"] += len(items) + 1
            counts["rounds"] += 1
            counts["generations"].add(follower.stats()["generation"])
            for (key, at), answer in zip(items, answers):
                if not answer and as_of >= at:
                    false_negatives.append((key, at, as_of))
            if not single and as_of >= items[-1][1]:
                false_negatives.append((items[-1][0], items[-1][1], as_of))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    pipe.send(("ready", os.getpid(), follower.writer))
    while True:
        command, argument = pipe.recv()
        if command == "commit":
            committed.update(argument)
            pipe.send(None)
        elif command == "ask":
            as_of = follower._refreshed_at
            pipe.send((as_of, follower.contains_many(argument), follower.writer,
                       follower.stats()))
        elif command == "stop":
            stop.set()
            watcher.join()
            follower.close()
            pipe.send((false_negatives[:20], len(false_negatives), counts["checks"],
                       counts["rounds"], sorted(g for g in counts["generations"] if g is not None)))
            return


def manual(pipe, dsn, index, path, interval, max_lag):
    """A follower without its thread until told to start it, obeying commands from a pipe: so
    that a test orders the followers' steps across processes."""
    import signal
    from bloomfilter import shared

    follower = SharedIndexFollower(dsn, index, path=path, interval=interval, max_lag=max_lag,
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
