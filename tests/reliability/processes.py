"""Starting and reading the suite's child processes (tests/reliability/worker.py and miopy-driver), and
the real faulty filesystems they can run on: a read-only bind mount and a full tmpfs, each made in a
private mount namespace with `unshare -rm`, which needs no privileges where user namespaces are enabled.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "tests.reliability.worker"]
DRIVER = [sys.executable, "-m", "miopy.cli.driver", "conv"]
TIMEOUT_S = 300   # a bound, not a timing: children compile from a cold cache on a shared, loaded machine

# `sh -c SCRIPT DIR CMD...`: mount something on DIR, then become CMD.
_READ_ONLY = 'mount --bind -o ro "$0" "$0" && exec "$@"'
FILLER = ".filler"   # fills the tmpfs of full_disk before the command runs
_FULL = f'mount -t tmpfs -o size=8k miopy-full "$0" && {{ cat /dev/zero > "$0/{FILLER}" 2>/dev/null; exec "$@"; }}'


def child_env(**overrides: str | None) -> dict[str, str]:
    """This process's environment with overrides applied (None removes a variable). Python warnings
    (pyopencl's compiler-output notes, for one) are silenced, so a child's stderr holds only what miopy
    logged and the suite can count its warnings."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def read_only(directory: Path) -> list[str]:
    """Command prefix that runs a command with directory mounted read-only (a real EROFS, even for root)."""
    return ["unshare", "-rm", "sh", "-c", _READ_ONLY, str(directory)]


def full_disk(directory: Path) -> list[str]:
    """Command prefix that runs a command with an 8 KiB tmpfs on directory, filled before the command starts
    (every write fails with ENOSPC, however small: a kernel cache marker entry is 170 bytes)."""
    return ["unshare", "-rm", "sh", "-c", _FULL, str(directory)]


@functools.cache
def namespaces_work() -> bool:
    """Whether `unshare -rm` with a bind mount works here (it does not in every container)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run(read_only(Path(tmp)) + ["true"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def start_worker(command: str, args: dict, env: dict | None = None, prefix: list[str] = ()) -> subprocess.Popen:
    return subprocess.Popen(list(prefix) + WORKER + [command, json.dumps(args)], cwd=ROOT, env=env or child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_line(proc: subprocess.Popen, word: str) -> str:
    """Read the child's stdout up to a line starting with word (its progress protocol)."""
    for line in proc.stdout:
        if line.startswith(word):
            return line.strip()
    raise AssertionError(f"child ended before {word}: {proc.wait()} {proc.stderr.read()}")


def result_of(proc: subprocess.Popen) -> dict:
    """Wait for a worker and return its RESULT, with its exit status and stderr added."""
    out, err = proc.communicate(timeout=TIMEOUT_S)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"worker printed no RESULT (rc {proc.returncode}):\n{out}\n{err}"
    result = json.loads(lines[-1][len("RESULT "):])
    result.update(returncode=proc.returncode, stderr=err)
    return result


def run_worker(command: str, args: dict, env: dict | None = None, prefix: list[str] = ()) -> dict:
    return result_of(start_worker(command, args, env, prefix))


def start_driver(flags: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(DRIVER + flags, cwd=ROOT, env=env or child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_driver(flags: list[str], env: dict | None = None, prefix: list[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(list(prefix) + DRIVER + flags, cwd=ROOT, env=env or child_env(), capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def driver_compiles(stdout: str) -> int:
    """The compiled= count of miopy-driver's last line."""
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("kernel cache: compiled="), last
    return int(last.split("compiled=")[1].split()[0])


def warning_lines(stderr: str) -> list[str]:
    """What a child logged to stderr (miopy's warnings reach it through logging's last-resort handler)."""
    return [line for line in stderr.splitlines() if line.strip()]
