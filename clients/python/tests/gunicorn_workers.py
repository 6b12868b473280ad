"""gunicorn for the tests: a server of a few workers on a free port, waited for and stopped, and
the answers of every worker to one request (concurrent requests spread over them)."""

import concurrent.futures
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


@contextlib.contextmanager
def gunicorn(app, workers, cwd, env, preload=True, probe="/", timeout=30):
    """(server process, port) of gunicorn serving `app` once it answers `probe`; stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn"] + (["--preload"] if preload else []) +
        ["--workers", str(workers), "--bind", "127.0.0.1:%d" % port, "--log-level", "warning", app],
        env=env, cwd=cwd, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                ask(port, probe)
                break
            except OSError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.1)
        yield server, port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def ask(port, path):
    """(the answering worker's pid, the other words of its answer) to GET `path`."""
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as response:
        pid, *words = response.read().decode().split()
        return int(pid), words


def ask_every_worker(port, path, workers, timeout=10, spread=16):
    """{worker pid: [the words of each of its answers]} once `workers` workers have answered, or
    those that did by `timeout`."""
    answers = {}
    deadline = time.monotonic() + timeout
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        while len(answers) < workers and time.monotonic() < deadline:
            for pid, words in pool.map(lambda _: ask(port, path), range(spread)):
                answers.setdefault(pid, []).append(words)
    return answers
