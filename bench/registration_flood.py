"""Anonymous registrations flooding an `auto_join` group, and a chat that must not notice.

A bridge with its embedded hub and the echo bot runs in a process of its own (`serve`); this
process opens a webchat tab in the bound room `canary`, then registers N bots as fast as it
can (half with `POST /register`, half with `bot.connect` over WebSocket, sockets held open,
50 at a time) while the tab keeps doing round trips through the bridge's channel link to the
echo bot, and for two seconds after the flood. Prints, per run and as the median of the
runs: registrations taken and refused, the canary's p50 and worst round trip meanwhile, and
the server's peak and final RSS (from /proc).

    python bench/registration_flood.py [--bots 2000] [--runs 3] [--scenario defaults]
    python bench/registration_flood.py --code /tmp/before --scenario before

Scenarios: `defaults` (the hub's limits as shipped: one address, so the rate limit refuses
most), `distributed` (no rate limit, as if every registration came from another address;
the group's `auto_join_limit` still applies), `unlimited` (no rate limit, no group cap: only
the coalescing of participants notices is left), `before` (no new settings at all, for a
checkout from before the limits existed, run with `--code`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server_process import (  # type: ignore[import-not-found]
    ROOT,
    common_arguments,
    memory_mb,
    repeat,
    serve_if_asked,
    server,
    use_code,
)

SCRIPT = str(HERE / "registration_flood.py")
REGISTER = "bench-register-token"
LINK_TOKEN = "bench-link-token"
AFTERMATH = 2.0
SCENARIOS: dict[str, dict[str, Any]] = {
    "before": {},
    "defaults": {},
    "distributed": {"register_rate_per_minute": 0},
    "unlimited": {"register_rate_per_minute": 0, "group": {"auto_join_limit": 1_000_000}},
}


# ---------------------------------------------------------------- the server process

async def serve(extra: dict[str, Any]) -> None:
    """Bridge + embedded hub + echo bot; prints `READY <webchat ws> <hub http>`."""
    use_code()
    import aiohttp

    from bridge.app import BridgeApp
    from bridge.bcn.examples.echo import build_echo_bot
    from bridge.config.schema import BridgeConfig
    from bridge.core import registry

    group = {"id": "flood", "driver": "Echo", "bots": ["Echo"], "auto_join": True,
             **extra.pop("group", {})}
    with tempfile.TemporaryDirectory() as scratch:
        hub = {"listen": "127.0.0.1:0", "data_dir": f"{scratch}/hub", "link_tokens": [LINK_TOKEN],
               "register_tokens": [REGISTER], "groups": [group], **extra}
        config = BridgeConfig.model_validate({
            "store": f"sqlite:///{scratch}/bridge.db", "web": {"listen": "127.0.0.1:0"},
            "hub": hub, "bcn": {"url": "embedded"},
            "bindings": [{"channel": "webchat:main", "chat": "canary", "group": "flood",
                          "protocol": {"enabled": False}}],
        }).model_copy(update={"accounts": {"webchat": {
            "main": registry.account_config_model("webchat")()}}})
        app = BridgeApp(config)
        await app.start()
        bot = build_echo_bot(app.bcn_url + "/ws/bot", stream=False, apply_env=False)
        task = asyncio.create_task(bot.run())
        http_url = app.bcn_url.replace("ws://", "http://")
        async with aiohttp.ClientSession() as http:
            while True:
                async with http.get(http_url + "/healthz") as response:
                    if (await response.json())["bots_online"] >= 1:
                        break
                await asyncio.sleep(0.05)
        assert app.relay is not None and app.web is not None
        await app.relay.link.wait_ready(30)
        web = app.web.url.replace("http://", "ws://")
        print(f"READY {web}/webchat/main/ws {http_url}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            task.cancel()
            await app.stop()


# ---------------------------------------------------------------- the flood

class Flood:
    """N registrations, `concurrency` at a time; WebSocket bots stay connected."""

    def __init__(self, http: Any, hub_http: str, bots: int, concurrency: int = 50) -> None:
        self.http, self.hub_http, self.bots = http, hub_http, bots
        self.gate = asyncio.Semaphore(concurrency)
        self.taken = self.refused = 0
        self.sockets: list[Any] = []

    async def run(self) -> None:
        await asyncio.gather(*(self._one(n) for n in range(self.bots)))

    async def _one(self, n: int) -> None:
        async with self.gate:
            ok = await (self._http(n) if n % 2 else self._ws(n))
            if ok:
                self.taken += 1
            else:
                self.refused += 1

    async def _http(self, n: int) -> bool:
        params = {"token": REGISTER, "bot-name": f"flood-{n:05d}"}
        async with self.http.post(self.hub_http + "/register", params=params) as response:
            await response.read()
            return bool(response.status == 200)

    async def _ws(self, n: int) -> bool:
        from bridge.bcn import BcnError, Connection

        ws = await self.http.ws_connect(self.hub_http.replace("http://", "ws://") + "/ws/bot")
        conn = Connection(ws, name=f"flood-{n}")
        reader = asyncio.create_task(conn.run())
        try:
            await conn.request("bot.connect", {"name": f"flood-{n:05d}", "protocol_version": 3})
        except BcnError:
            await conn.close()
            reader.cancel()
            return False
        self.sockets.append((conn, reader))
        return True

    async def close(self) -> None:
        for conn, reader in self.sockets:
            await conn.close()
            reader.cancel()


async def one_run(bots: int, extra: dict[str, Any], code: str | None) -> dict[str, float]:
    import aiohttp
    from hub import percentile  # type: ignore[import-not-found]
    from relay import Tab  # type: ignore[import-not-found]

    async with server(SCRIPT, "serve", json.dumps(extra), code=code) as (urls, pid):
        webchat_url, hub_http = urls
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:
            tab = Tab(await http.ws_connect(webchat_url), "canary")
            await tab.join()
            for _ in range(5):  # warm up
                await tab.round_trip()
            flood = Flood(http, hub_http, bots)
            started = time.perf_counter()
            flooding = asyncio.create_task(flood.run())
            canary: list[float] = []
            rss: list[float] = []
            # The flood's cost can outlast it (notices still being answered): keep measuring
            # for AFTERMATH seconds after the last registration.
            flooded_at: float | None = None
            while flooded_at is None or time.perf_counter() - flooded_at < AFTERMATH \
                    or len(canary) < 5:
                if flooded_at is None and flooding.done():
                    flooded_at = time.perf_counter()
                canary.append(await tab.round_trip())
                rss.append(memory_mb(pid))
            await flooding
            seconds = (flooded_at or time.perf_counter()) - started
            figures = {
                "taken": flood.taken, "refused": flood.refused, "flood_s": seconds,
                "canary_p50_ms": percentile(canary, 0.5) * 1000,
                "canary_max_ms": max(canary) * 1000,
                "peak_rss_mb": max(memory_mb(pid, "VmHWM"), *rss),
                "rss_after_mb": memory_mb(pid),
            }
            await flood.close()
            await tab.ws.close()
    return figures


def show(label: str, figures: dict[str, float]) -> None:
    print(f"  {label:<8} taken {figures['taken']:5.0f}  refused {figures['refused']:5.0f}  "
          f"flood {figures['flood_s']:6.1f} s  canary p50 {figures['canary_p50_ms']:8.1f} ms  "
          f"max {figures['canary_max_ms']:8.1f} ms  peak RSS {figures['peak_rss_mb']:6.0f} MB  "
          f"RSS after {figures['rss_after_mb']:6.0f} MB", flush=True)


async def run(bots: int, runs: int, scenario: str, code: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    where = f"code from {code}" if code else "this checkout"
    print(f"bench/registration_flood.py: {bots} registrations, scenario {scenario!r}, {where}")
    await repeat(runs, lambda: one_run(bots, json.loads(json.dumps(SCENARIOS[scenario])), code),
                 show)


def main() -> None:
    if serve_if_asked(serve):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=2000)
    common_arguments(parser, list(SCENARIOS))
    args = parser.parse_args()
    asyncio.run(run(args.bots, args.runs, args.scenario, args.code))


if __name__ == "__main__":
    main()
