"""The Redis store restarted mid-burst under two `bcn-bridge run` instances, the example Echo
bot with its defaults (it streams word by word).

Real processes: a private `redis-server` of this test (append-only file fsynced on every
write, as a production Redis keeps its data through a restart), killed with SIGKILL part-way
through a burst of 50 human messages and started again on the same port about two seconds
later, while the person keeps talking; a `bcn-bridge hub`, two bridges on that Redis, the
platform's fake in this process. Replies may come late, but every message gets exactly one
reply showing the bot's final, no preview is left behind and nothing is edited after its
final (the counts of tests/faults/replies.py, printed with `-s`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.faults.replies import tally
from tests.faults.rig import Bridges, bcn_section
from tests.faults.scenes import SCENES, settle
from tests.support.redis_process import RedisProcess
from tests.support.redis_server import with_prefix

pytestmark = pytest.mark.slow

BURST = 50
SPACING = 0.05
DOWN_FROM, UP_AT = 15, 40
"""Redis is killed after this message of the burst, and started again after that one."""
DOWN_AT_LEAST = 2.0
ANSWERED_WITHIN = 30.0
"""After the restart, for every reply (Telegram needs a few seconds, on a loaded machine)."""
SETTLE = 0.5


@pytest.mark.parametrize("platform", [
    "telegram",
    "slack",
])
async def test_redis_restarted_mid_burst_replies_late_but_none_lost_or_doubled(
    tmp_path: Path, platform: str
) -> None:
    texts = [f"r{n:02d} alpha beta gamma" for n in range(BURST)]
    warm_up = "before the burst"
    loop = asyncio.get_running_loop()
    async with RedisProcess(tmp_path / "redis") as redis, SCENES[platform]() as scene:
        store, _ = with_prefix(redis.url)
        async with Bridges(tmp_path, "one host",
                           lambda name, port: scene.config(store, bcn_section(port, name))
                           ) as rig:  # fmt: skip
            def shown(sent: list[str]) -> bool:
                return not tally(scene.versions(), sent, scene.visible).lost

            await scene.say(warm_up)
            await scene.wait_until(lambda: shown([warm_up]), ANSWERED_WITHIN)
            for n, text in enumerate(texts):
                await scene.say(text)
                await asyncio.sleep(SPACING)
                if n == DOWN_FROM:
                    await redis.kill()
                    down_at = loop.time()
                elif n == UP_AT:
                    await asyncio.sleep(max(0.0, DOWN_AT_LEAST - (loop.time() - down_at)))
                    await redis.start()
                    down_for = loop.time() - down_at
            try:
                await scene.wait_until(lambda: shown(texts), ANSWERED_WITHIN)
            except TimeoutError:
                print(f"\nnot all answered within {ANSWERED_WITHIN}s")
            late = loop.time() - down_at  # printed, never asserted
            await settle(SETTLE)
            result = tally(scene.versions(), [warm_up, *texts], scene.visible)
            running = [name for name, process in rig.instances.items() if process.running]
            logs = rig.logs()
    print(f"\n{platform} x2, Redis killed after message {DOWN_FROM} and back {down_for:.1f} s "
          f"later: all answered {late:.1f} s after it went down; {result.counts()}; "
          f"instances still running: {running}")
    assert result.clean, f"{result.details()}\n{logs}"
    assert running == rig.names, f"an instance exited while Redis was away\n{logs}"
