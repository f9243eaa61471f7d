"""The demo in the image listens where `docker run -p 8080:8080` reaches it (every interface
inside a container) and stays on loopback on a laptop."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bridge.demo import demo_config, demo_web_host, in_container
from tests.support.bridge_process import REPO, free_port


def test_the_demo_listens_on_every_interface_only_inside_a_container(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    assert not in_container(laptop, {}) and demo_web_host(laptop, {}) == "127.0.0.1"
    assert demo_web_host(laptop, {"container": "docker"}) == "0.0.0.0"  # the image's ENV
    assert demo_web_host(laptop, {"container": "podman"}) == "0.0.0.0"
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / ".dockerenv").touch()
    assert demo_web_host(docker, {}) == "0.0.0.0"
    podman = tmp_path / "podman"
    (podman / "run").mkdir(parents=True)
    (podman / "run" / ".containerenv").touch()
    assert demo_web_host(podman, {}) == "0.0.0.0"
    config = demo_config(tmp_path, web_port=8080, web_host="0.0.0.0")
    assert config.web.listen == "0.0.0.0:8080"
    assert demo_config(tmp_path).web.listen == "127.0.0.1:8080"  # what the tests start


def test_the_image_tells_the_demo_it_is_in_a_container() -> None:
    text = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    final_stage = text.rsplit("FROM ", 1)[1]
    assert "container=docker" in final_stage


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def run_demo(tmp_path: Path, *args: str, container: str | None) -> tuple[subprocess.Popen[bytes],
                                                                          int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "container"}
    if container is not None:
        env["container"] = container
    demo = subprocess.Popen(
        ["bcn-bridge", "demo", "--port", str(port), "--data-dir", str(tmp_path), *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not answers(f"http://127.0.0.1:{port}/healthz"):
        if demo.poll() is not None or time.monotonic() > deadline:
            demo.kill()
            pytest.fail("the demo did not answer on 127.0.0.1")
        time.sleep(0.2)
    return demo, port


@pytest.mark.slow
def test_a_published_port_reaches_the_demo_in_a_container(tmp_path: Path) -> None:
    """127.0.0.2 is loopback too, but a socket bound to 127.0.0.1 does not take it: it
    answers only when the demo listens on every interface, as `-p` needs inside a container."""
    demo, port = run_demo(tmp_path / "in", container="docker")
    try:
        assert answers(f"http://127.0.0.2:{port}/healthz")
    finally:
        demo.terminate()
        demo.wait(timeout=30)
    demo, port = run_demo(tmp_path / "out", "--host", "127.0.0.1", container=None)
    try:  # the check can fail: on loopback only, the other address is refused
        assert not answers(f"http://127.0.0.2:{port}/healthz")
    finally:
        demo.terminate()
        demo.wait(timeout=30)
