"""A function run in a child made by os.fork(), and what it reports brought back: the fork tests
check a follower in the child the way an application's worker would use it."""

import os
import traceback


def in_a_child(report):
    """Forks; the child calls report(), which returns numbers (bools count as 0 and 1), and
    leaves with os._exit, running none of the parent's cleanups. Returns the child's exit status
    (0 when report() returned) and the numbers."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(read)
            os.write(write, " ".join(str(int(value)) for value in report()).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(child, 0)
    with os.fdopen(read, "rb") as pipe:
        numbers = [int(value) for value in pipe.read().decode().split()]
    return status, numbers
