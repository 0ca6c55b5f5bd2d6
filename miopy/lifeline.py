"""Helper processes that never outlive their parent, however it ends (SIGKILL included).

A worker process (one of tuning's compile-ahead workers or of find's compile pool) calls ``die_with_parent`` first
thing. On Linux, when the parent was started from its main thread, the kernel then kills the worker the
moment the parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the signal follows the *thread* that started
the worker, so it is used only when that thread is the main one, which lives as long as the process). In
every case a daemon thread also polls the parent's pid and exits the worker once it changes (the worker was
re-parented), within ``POLL_S`` of the parent's death, or as soon as a long call in C returns the
interpreter to it. multiprocessing's resource tracker needs no help: it exits when the last process
holding its pipe (the parent and these workers) is gone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
POLL_S = 0.25


def parent_token() -> tuple[int, bool]:
    """What the parent passes to its workers: its pid, and whether this is its main thread."""
    return os.getpid(), threading.current_thread() is threading.main_thread()


def die_with_parent(token: tuple[int, bool], poll_s: float = POLL_S) -> None:
    """Make this process exit when the parent named by token (parent_token() in the parent) ends."""
    parent_pid, from_main_thread = token
    if from_main_thread:
        _kill_me_with_parent()
    if os.getppid() != parent_pid:   # the parent died before we got here
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid, poll_s), name="miopy-lifeline", daemon=True).start()


def _kill_me_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int, poll_s: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(poll_s)
    os._exit(1)
