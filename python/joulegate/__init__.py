"""Regions for Python apps run under ``joulegate monitor``.

``joulegate monitor`` puts this package on the app's PYTHONPATH (no pip install needed)::

    import joulegate

    with joulegate.region("train"):
        train()

    @joulegate.monitor("step")      # or @joulegate.monitor() for the function's name
    def step(batch): ...

Under the monitor each start and stop is one line on the channel the monitor opened
(fd ``$JOULEGATE_REGION_FD``), the same protocol as the JavaScript client: ``S#<call> <ms> <name>``
and ``E#<call> <ms> <name>``, ms being CLOCK_MONOTONIC (``time.monotonic_ns()``), the clock the
monitor reads with Node's ``process.hrtime``. The call id (pid and a counter) pairs each stop
with its own start, so regions in threads and in forked workers pair correctly. Not under the
monitor, everything here does nothing.
"""

import functools
import inspect
import itertools
import os
import stat
import threading
import time

__all__ = ["region", "monitor", "active"]

_ENV = "JOULEGATE_REGION_FD"
# One short os.write is one message on the channel (atomic up to PIPE_BUF): lines stay whole.
_MAX_NAME = 3000
_calls = itertools.count(1)
_channel = None  # (pid, fd or None): looked up again in a forked child


def _channel_fd():
    """The monitor's channel fd, or None when not under the monitor (or it is unusable)."""
    global _channel
    pid = os.getpid()
    if _channel is not None and _channel[0] == pid:
        return _channel[1]
    fd = None
    try:
        candidate = int(os.environ.get(_ENV, ""))
        # Only the pipe the monitor made (a socket pair, as Node makes pipes): a child started
        # with close_fds may hold another file under that number.
        mode = os.fstat(candidate).st_mode if candidate > 2 else 0
        if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            fd = candidate
    except (ValueError, OSError):
        fd = None
    _channel = (pid, fd)
    return fd


def active():
    """Whether regions reach a monitor."""
    return _channel_fd() is not None


def _emit(kind, name, call):
    now_ns = time.monotonic_ns()
    fd = _channel_fd()
    if fd is None:
        return
    ms = "%d.%03d" % divmod(now_ns // 1000, 1000)
    line = "%s#%s %s %s\n" % (kind, call, ms, name)
    try:
        # One write per line, no lock: a signal handler that marks a region cannot deadlock.
        os.write(fd, line.encode("utf-8", "replace"))
    except OSError:
        global _channel
        _channel = (os.getpid(), None)  # the monitor is gone: stay quiet from now on


def _clean(name):
    if not isinstance(name, str) or name == "":
        raise TypeError("region name must be a non-empty string")
    return name.replace("\r", " ").replace("\n", " ")[:_MAX_NAME]


class region:
    """A region: ``with region("train"):``, or ``r = region("x").start()`` … ``r.end()``.

    One object may be entered again after it ended, nested in itself, and shared by threads:
    ``end()`` ends the latest start made by the same thread.
    """

    def __init__(self, name):
        self.name = _clean(name)
        self._open = {}  # thread id -> call ids started by that thread, latest last

    def start(self):
        call = "%d.%d" % (os.getpid(), next(_calls))
        self._open.setdefault(threading.get_ident(), []).append(call)
        _emit("S", self.name, call)
        return self

    def end(self):
        """Ends this thread's latest start of this object; without one, does nothing."""
        calls = self._open.get(threading.get_ident())
        if calls:
            _emit("E", self.name, calls.pop())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.end()
        return False


def monitor(name=None):
    """Decorator: each call of the function is a region (named after it by default).

    ``@monitor("step")``, ``@monitor()`` and ``@monitor`` all work; async functions too.
    """
    if callable(name):
        return monitor(None)(name)

    def decorate(fn):
        region_name = _clean(name if name is not None else fn.__name__)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args, **kwargs):
                with region(region_name):
                    return await fn(*args, **kwargs)

            return run_async

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with region(region_name):
                return fn(*args, **kwargs)

        return run

    return decorate
