"""Two `bcn-bridge run` instances behind one load balancer, on one Redis, against a real
Synapse — and a kill -9 of one of them in the middle of a burst.

What an operator runs to scale the Matrix bridge out: the registration's `url` is a load
balancer (tests/support/tcp_balancer.py, round robin, a refusing backend skipped) in front
of both instances' push listeners, so either may be handed any transaction; the dedupe of
transactions and messages is the shared store's. The example Echo bot keeps its default: it
streams word by word, so each answer is one event edited several times.

A burst of messages from a person, 50 ms apart; `random.Random(draw)` picks the victim and
the message after which it is killed (no door is held around the kill, unlike the fault
tests on Telegram and Slack: a Matrix send is idempotent by its txnId,
adapters/matrix/send_journal.py). Once every message is answered, the victim is started
again and one more message sent. Then, from what the room's timeline shows
(tests/faults/replies.py): every message has exactly one reply event, showing the final
echo; no preview is left behind; nothing is edited after its final.

Before the burst, one transaction is pushed to both instances at the same moment (a
homeserver's retry on a new connection, through a balancer): it is answered once.

The instances run as on one host (the survivor sees a dead claimant's pid is gone and
takes its claims and leases over at once); on separate hosts the same happens after the
claims' TTLs (10 s for a transaction, 60 s for a message), which this test does not wait for.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import pytest
from matrix_support import BRIDGE_USER, Homeserver, Person, edits_of, messages
from test_matrix_e2e import joined
from test_matrix_transactions import message_event, push

from tests.faults.replies import Tally, tally
from tests.faults.rig import Bridges, bcn_section
from tests.support.bridge_process import free_port
from tests.support.redis_server import prefixed
from tests.support.stores import redis_server
from tests.support.tcp_balancer import TcpBalancer

__all__ = ["redis_server"]

BURST = 30
SPACING = 0.05
ANSWERED_WITHIN = 90.0
SETTLE = 1.0
"""After the last answer: room for a late edit or a repeated post to show up."""
PUPPETS = "@bcn_"


def versions(events: list[dict[str, Any]]) -> dict[Hashable, Sequence[str | None]]:
    """Every text each message of the bridge's users showed, oldest first (the original's
    body, then each of its replacements' new content)."""
    shown: dict[Hashable, Sequence[str | None]] = {}
    for message in messages(events):
        if not message["sender"].startswith(PUPPETS):
            continue
        edits = [e["content"]["m.new_content"]["body"]
                 for e in edits_of(events, message["event_id"])
                 if e["sender"] == message["sender"]]
        shown[message["event_id"]] = [message["content"]["body"], *edits]
    return shown


async def measure(ada: Person, room: str, sent: list[str]) -> Tally:
    return tally(versions(await ada.events(room)), sent)


async def answered(ada: Person, room: str, sent: list[str], what: str) -> None:
    """Until every message in `sent` shows a reply; a timeout leaves the counting to the
    assertion."""
    try:
        async with asyncio.timeout(ANSWERED_WITHIN):
            while (await measure(ada, room, sent)).lost:
                await asyncio.sleep(0.2)
    except TimeoutError:
        print(f"\n{what}: not all answered within {ANSWERED_WITHIN}s")


def instance_config(homeserver: Homeserver, room: str, store: str, ports: dict[str, int],
                    name: str, hub_port: int) -> dict[str, Any]:
    account = homeserver.account(listen=f"127.0.0.1:{ports[name]}",
                                 url=f"http://127.0.0.1:{homeserver.listen_port}")
    settings = account.model_dump(mode="json")
    settings["as_token"] = account.as_token.get_secret_value()
    settings["hs_token"] = account.hs_token.get_secret_value()
    return {"bcn": bcn_section(hub_port, name), "store": store, "web": {"enabled": False},
            "accounts": {"matrix": {"main": settings}},
            "bindings": [{"channel": "matrix:main", "chat": room, "group": "demo"}]}


# Draw 3 kills the instance that holds the homeserver's connection, draw 7 the other.
@pytest.mark.parametrize("draw", [3, 7])
async def test_two_instances_behind_a_balancer_kill_9_mid_burst_every_message_one_reply(
        tmp_path: Path, homeserver: Homeserver, ada: Person, redis_server: str,
        draw: int) -> None:
    rng = random.Random(draw)
    victim_index = rng.randrange(2)
    kill_after = rng.randrange(5, BURST - 5)
    texts = [f"d{draw}m{n:02d} alpha beta gamma" for n in range(BURST)]
    warm_up, sentinel = f"d{draw} before the burst", f"d{draw} after the restart"
    twice = f"d{draw} pushed to both instances"
    room = await ada.create_room(invite=[BRIDGE_USER])
    ports = {"bridge-a": free_port(), "bridge-b": free_port()}
    async with prefixed(redis_server) as store, TcpBalancer(
        homeserver.listen_port, list(ports.values())
    ) as balancer, Bridges(
        tmp_path, "one host",
        lambda name, hub_port: instance_config(homeserver, room, store, ports, name, hub_port),
    ) as rig:
        victim = rig.names[victim_index]
        await ada.wait_for(room, joined(BRIDGE_USER))
        await ada.say(room, warm_up)
        await answered(ada, room, [warm_up], "warm-up")
        # One transaction handed to both instances at the same moment (what a balancer
        # does when the homeserver retries on a new connection): relayed once.
        both = message_event(room, ada.user_id, twice)
        answers = await asyncio.gather(*(
            push(f"http://127.0.0.1:{port}/_matrix/app/v1/transactions/d{draw}", [both])
            for port in ports.values()))
        assert [status for status, _ in answers] == [200, 200]
        await answered(ada, room, [twice], "the transaction sent to both")
        for n, text in enumerate(texts):
            await ada.say(room, text)
            await asyncio.sleep(SPACING)
            if n == kill_after:
                await rig.instances[victim].kill()
        await answered(ada, room, texts, "burst")
        await rig.restart(victim)
        await ada.say(room, sentinel)
        await answered(ada, room, [sentinel], "after the restart")
        await asyncio.sleep(SETTLE)
        result = await measure(ada, room, [warm_up, twice, *texts, sentinel])
        logs = rig.logs()
    print(f"\nmatrix x2 draw {draw}: kill -9 of {victim} after message {kill_after}; "
          f"connections per instance {balancer.connections}; {result.counts()}")
    assert result.previews, "the burst was not streamed"
    assert result.clean, f"{result.details()}\n{logs}"
