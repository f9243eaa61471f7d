"""`bcn-bridge demo --dashboard`: the demo with the operator's dashboard on, its sign-in
token made up at start and printed beside its URL — as a new user runs it, a real process."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import yaml
from ops_support import WAIT

from tests.support.bridge_process import REPO, ServiceProcess, free_port


async def test_demo_dashboard_prints_a_token_that_signs_in(tmp_path: Path) -> None:
    port = free_port()
    demo = ServiceProcess(["demo", "--port", str(port), "--dashboard",
                           "--data-dir", str(tmp_path)], "bcn-bridge demo is running")
    await demo.start()
    try:
        line = await demo.wait_for_line("sign-in token:")
        found = re.search(r"dashboard: (\S+)/dashboard\s+sign-in token: (\S+)", line)
        assert found is not None, line
        base, token = found.groups()
        assert base == f"http://127.0.0.1:{port}"
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar,
                                         timeout=aiohttp.ClientTimeout(total=WAIT)) as http:
            async with http.post(f"{base}/dashboard/login",
                                 data={"token": "not the token at all", "operator": "Eve"},
                                 allow_redirects=False) as refused:
                assert refused.status == 401
            async with http.post(f"{base}/dashboard/login",
                                 data={"token": token, "operator": "Ada"},
                                 allow_redirects=False) as signed_in:
                assert signed_in.status == 303
            async with http.get(f"{base}/dashboard/api/session") as session:
                assert session.status == 200
                assert (await session.json())["operator"] == "Ada"
    finally:
        assert await demo.stop() == 0


async def test_demo_without_the_switch_has_no_dashboard(tmp_path: Path) -> None:
    port = free_port()
    demo = ServiceProcess(["demo", "--port", str(port), "--data-dir", str(tmp_path)],
                          "bcn-bridge demo is running")
    await demo.start()
    try:
        assert not any("sign-in token" in line for line in demo.lines)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/dashboard") as page:
                assert page.status == 404
    finally:
        assert await demo.stop() == 0


def test_the_readmes_yaml_can_be_pasted_as_it_is() -> None:
    """Every YAML block of the README parses (a flow mapping holding `${…}` did not)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL)
    assert blocks
    for block in blocks:
        assert isinstance(yaml.safe_load(block), dict), block
