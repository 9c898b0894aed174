"""Building and running the repo's image from a test: the engine check, pip's settings passed
as build args, and a container's lifetime.

A build's pip must reach the packages this host's pip reaches. Index URLs pass as they are;
local folders (find-links, file:// indexes) cannot be seen from inside a build, so each is
served over HTTP on 127.0.0.1 for the build's length (the build uses the host's network).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

PIP_KEYS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "find-links": "PIP_FIND_LINKS"}


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])} failed: {result.stderr.strip()[-2000:]}")
    return result


def engine_problem(base: str) -> str | None:
    """Why no image can be built here (None when one can)."""
    try:
        if subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode != 0:
            return "no Docker engine answers (bin/test starts one when run as root: bin/docker-ready)"
    except (OSError, subprocess.TimeoutExpired):
        return "no docker command (bin/test installs Debian's docker.io when run as root: bin/docker-ready)"
    if docker("image", "inspect", base, check=False).returncode != 0:
        return f"the base image {base} is missing and no registry gave it (bin/docker-ready builds a local one)"
    return None


def pip_settings() -> dict[str, list[str]]:
    """pip's effective index settings on this host (its config files and PIP_* variables)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    found: dict[str, list[str]] = {}
    from_env: dict[str, list[str]] = {}
    for line in out.splitlines():  # files in pip's own order, later ones winning; PIP_* over all
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in PIP_KEYS:
            (from_env if key.startswith(":env:") else found)[name] = shlex.split(value.strip().strip("'\""))
    return {**found, **from_env}


def _local_folder(location: str) -> str | None:
    """The folder a find-links or index location names on this host, or None (a URL)."""
    if location.startswith("file://"):
        path = urlparse(location).path
    elif "://" in location:
        return None
    else:
        path = location
    return path if os.path.isdir(path) else None


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _serve(folder: str) -> ThreadingHTTPServer:
    """An HTTP server for ``folder`` on 127.0.0.1, on the same port run after run when it is free:
    the URL is a build arg, and a build arg that changes rebuilds the venv layer."""
    handler = functools.partial(_Quiet, directory=folder)
    for port in (20000 + zlib.crc32(folder.encode()) % 20000, 0):
        try:
            return ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError:
            continue
    raise OSError(f"cannot serve {folder} on 127.0.0.1")


@contextlib.contextmanager
def pip_build_args():
    """``--build-arg`` pairs that give a build this host's pip settings; local folders are
    served over HTTP until the block ends. Nothing when the host's pip has no such settings
    (the Dockerfile's defaults then hold)."""
    servers, args = [], []
    try:
        for name, locations in pip_settings().items():
            urls = []
            for location in locations:
                folder = _local_folder(location)
                if folder is None:
                    urls.append(location)
                    continue
                # An index's pages may link its files by relative paths above it (../../files/):
                # its parent folder is served, and the index under its own name.
                served, below = (os.path.dirname(folder.rstrip("/")), os.path.basename(folder.rstrip("/")) + "/") \
                    if name != "find-links" else (folder, "")
                server = _serve(served)
                threading.Thread(target=server.serve_forever, daemon=True).start()
                servers.append(server)
                urls.append(f"http://127.0.0.1:{server.server_address[1]}/{below}")
            args += ["--build-arg", f"{PIP_KEYS[name]}={' '.join(urls)}"]
        yield args
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def wait_healthy(container: str, url: str, timeout: float = 120) -> float:
    """Seconds until Docker calls the container healthy and the app answers."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        state = docker("inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", container).stdout.split()
        if state[0] != "running":
            logs = docker("logs", "--tail", "30", container, check=False)
            raise AssertionError(f"container {state[0]}: {logs.stdout[-1500:]}{logs.stderr[-1500:]}")
        if state[1:] == ["healthy"]:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as r:
                assert r.status == 200
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"container not healthy within {timeout} s")


def processes_of(container_id: str) -> list[int]:
    """Host pids of processes in the container's cgroup (its whole process tree)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cgroup") as f:
                    if container_id in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found
