"""Readiness for Kubernetes (`/readyz?scope=serving`): a replica that lost the hub still takes
traffic, so a hub restart does not make every replica NotReady at once; the full `/readyz` and
`bcn_bridge_link_up` still say the link is down. Over HTTP, on a real `bcn-bridge run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ops_support import eventually_status, get, hub_and_webchat_bridge, value

pytestmark = pytest.mark.slow


async def test_serving_readiness_outlasts_the_hub_link(tmp_path: Path) -> None:
    hub, bridge, _, web_port = hub_and_webchat_bridge(tmp_path)
    base = f"http://127.0.0.1:{web_port}"
    try:
        await hub.start()
        await bridge.start()
        await eventually_status(f"{base}/readyz", 200)
        await hub.kill()
        down = json.loads(await eventually_status(f"{base}/readyz", 503))
        assert list(down["down"]) == ["bcn"]  # the relay's readiness names the link
        status, text = await get(f"{base}/readyz?scope=serving")
        assert status == 200 and json.loads(text)["status"] == "ready"
        _, metrics = await get(f"{base}/metrics")
        assert value(metrics, "bcn_bridge_link_up") == 0  # what the alert watches
        status, text = await get(f"{base}/readyz?scope=everything")
        assert status == 400 and "scope must be relay" in text
    finally:
        await bridge.stop()
        await hub.stop()


def test_the_bridge_pods_probe_serving_readiness() -> None:
    import yaml

    from tests.support.bridge_process import REPO

    docs = [d for d in yaml.safe_load_all((REPO / "deploy/k8s/bridge.yaml").read_text()) if d]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {"bcn-bridge", "bcn-bridge-web"}
    for deployment in deployments:
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz?scope=serving"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
