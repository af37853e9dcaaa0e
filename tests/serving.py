"""Run `gangplank serve` (real gunicorn) as a subprocess on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_kubeconfig(path: Path, server: str, ca: Path | None = None) -> Path:
    """A kubeconfig for `server` (`ca`: the CA its HTTPS certificate is signed by)."""
    authority = f"    certificate-authority: {ca}\n" if ca is not None else ""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        f"clusters:\n- name: fake\n  cluster:\n    server: {server}\n{authority}"
        "users:\n- name: fake\n  user:\n    token: not-a-secret\n"
        "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
    )
    return path


class Served:
    """`with Served([...flags]) as s:` starts gangplank and waits until /healthz answers."""

    def __init__(
        self,
        *flags: str,
        port: int | None = None,
        env: dict[str, str] | None = None,
        health_url: str | None = None,
    ) -> None:
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.command = [
            sys.executable,
            "-m",
            "extender",
            "serve",
            "--bind",
            f"127.0.0.1:{self.port}",
            *flags,
        ]
        self.env = {**os.environ, **(env or {})}
        self.health_url = health_url or f"{self.base}/healthz"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Served:
        self.process = subprocess.Popen(
            self.command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self.process.stdout.read().decode() if self.process.stdout else ""
                raise AssertionError(f"gangplank exited {self.process.returncode}:\n{output}")
            try:
                with urllib.request.urlopen(self.health_url, timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError("gangplank did not answer /healthz within 30 s")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def output(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        return self.process.stdout.read().decode()
