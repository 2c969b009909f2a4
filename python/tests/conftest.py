"""A real manager and agent for the tests: the `hetpilot` and `hetpilot-agent` binaries of
this checkout (`cargo build --bins` first; `HETPILOT_BIN_DIR` names another folder)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from hetpilot import Client

BIN_DIR = Path(os.environ.get("HETPILOT_BIN_DIR", Path(__file__).parents[2] / "target" / "debug"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(what: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}")


class Manager:
    def __init__(self, data: Path, flags: tuple = ()) -> None:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HETPILOT_")}
        env["RUST_LOG"] = "info"
        log = open(data / "manager.log", "ab")
        self.process = subprocess.Popen(
            [str(BIN_DIR / "hetpilot"), "serve", "--listen", f"127.0.0.1:{port}",
             "--lease-timeout-secs", "30", "--data-dir", str(data), *flags],
            env=env, stdout=subprocess.DEVNULL, stderr=log,
        )
        url_file = data / "manager.url"
        self.url = _until("the manager to listen", lambda: url_file.exists() and url_file.read_text().strip())
        self.admin = (data / "admin.token").read_text().strip()
        self.data = data
        self.agents: list = []

    def client(self, token: str | None = None) -> Client:
        return Client(self.url, token or self.admin)

    def user(self, name: str) -> str:
        r = httpx.post(f"{self.url}/v1/users", json={"name": name},
                       headers={"Authorization": f"Bearer {self.admin}"})
        r.raise_for_status()
        return r.json()["token"]

    def agent(self, slots: int = 4) -> None:
        r = httpx.post(f"{self.url}/v1/agent-tokens", json={"platform": "local"},
                       headers={"Authorization": f"Bearer {self.admin}"})
        r.raise_for_status()
        work = self.data / f"agent-{len(self.agents)}"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HETPILOT_")}
        env["HETPILOT_AGENT_TOKEN"] = r.json()["token"]
        self.agents.append(subprocess.Popen(
            [str(BIN_DIR / "hetpilot-agent"), "--manager", self.url, "--platform", "local",
             "--slots", str(slots), "--work-dir", str(work)],
            env=env, stdout=subprocess.DEVNULL, stderr=open(work / "agent.log", "ab"),
        ))

    def stop(self) -> None:
        for p in [*self.agents, self.process]:
            p.kill()
            p.wait()


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[Manager]:
    m = Manager(tmp_path)
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture
def tls_manager(tmp_path: Path) -> Iterator[Manager]:
    """A manager serving HTTPS with a self-signed certificate (`DATA/tls-cert.pem`)."""
    m = Manager(tmp_path, ("--tls", "self-signed"))
    try:
        yield m
    finally:
        m.stop()
