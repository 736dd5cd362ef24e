"""Child processes and waiting for them: paths, free ports, polling, clean-up."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

BACKEND_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BACKEND_DIR.parent


def wait_until(
    predicate: Callable[[], bool], timeout: float, what: str, *, interval: float = 0.05
) -> None:
    """Poll ``predicate`` every ``interval`` seconds until it is true; ``TimeoutError``
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def started(procs: list[subprocess.Popen[bytes]]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Make sure every process appended to ``procs`` is gone when the block ends."""
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def terminate(proc: subprocess.Popen[bytes], *, timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if ``proc`` has not exited within ``timeout`` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class WorkerProcess:
    """``manage.py run_job_workers`` as a real child process with its log in a file."""

    def __init__(
        self, log_path: Path, *args: str, env: dict[str, str], cwd: Path = BACKEND_DIR
    ) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_job_workers", *args],
            cwd=cwd,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for_log(self, text: str, timeout: float = 20) -> None:
        wait_until(lambda: text in self.log(), timeout, f"log line {text!r}")

    def wait_for_threads(self, count: int, timeout: float = 30) -> None:
        """Until ``count`` worker threads and the maintenance thread have started."""
        wait_until(
            lambda: (
                self.log().count("action=thread_started") >= count
                and "action=maintenance_started" in self.log()
            ),
            timeout,
            f"{count} worker threads",
        )

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()
