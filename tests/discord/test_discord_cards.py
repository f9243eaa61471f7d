"""A bot's question as a Discord card: buttons on the post, one press answers it, once.

Over real sockets: the fake Discord (REST, gateway, interactions) ↔ real discord.py ↔ the
bridge ↔ the embedded hub ↔ the example Rules bot, whose CLARIFY for `/ask Rules weather`
offers six cities.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from discord_support import WAIT, Server, account_config, binding, outbound

from adapters.discord import cards
from bridge.core.cards import Card, read_button_data
from bridge.core.model import PlatformRef
from bridge.core.taps import Tap, TapReply
from bridge.protocol import parse
from tests.fakes.discord import FakeDiscord, FakeInteraction, Posted
from tests.support.redis_server import prefixed
from tests.support.running_bridge import (
    BridgeStarter,
    RunningBridge,
    bridge_config,
    instances_of,
)
from tests.support.stores import redis_server

__all__ = ["redis_server"]

CITIES = ["Paris", "London", "New York", "Tokyo", "Berlin", "Sydney"]
EPHEMERAL = 64


@dataclass
class System(RunningBridge):
    fake: FakeDiscord | None = None
    server: Server | None = None

    @property
    def discord(self) -> FakeDiscord:
        assert self.fake is not None
        return self.fake

    async def ask_weather(self, who: dict[str, Any]) -> Posted:
        """`/ask Rules weather` typed in the channel; the card the CLARIFY shows as."""
        assert self.server is not None
        self.discord.push_message(self.server.general, who, "/ask Rules weather")
        card = await self.discord.wait_until(lambda: next(
            (post for post in self.discord.from_bridge(self.server.general)
             if post.components), None), WAIT)
        # As a person would: press once the post is done (Discord has answered the REST
        # call and the bridge noted where the card went), not the instant it shows.
        await self.wait_delivered()
        return card

    async def told(self, interaction: FakeInteraction) -> str:
        """What the person who pressed was told (waits for the answer)."""
        return await self.discord.wait_until(lambda: self.discord.told(interaction), WAIT)

    async def response_from_rules(self) -> Any:
        assert self.server is not None
        return await self.discord.wait_until(lambda: next(
            (found for post in self.discord.from_bridge(self.server.general)
             if post.author == "Rules" and (found := parse(post.content)) is not None
             and found.type == "RESPONSE"), None), WAIT)


@pytest.fixture
async def start_system(
    tmp_path: Path, fake: FakeDiscord, server: Server
) -> AsyncIterator[Callable[..., Any]]:
    starter = BridgeStarter(tmp_path)

    async def start(*, binding: dict[str, Any] | None = None, **account: Any) -> System:
        config = bridge_config(
            tmp_path,
            bindings=[{"channel": "discord:main", "chat": str(server.general), "group": "demo",
                       "protocol": {"enabled": True, "deliver": "raw"}, **(binding or {})}],
            accounts={"discord": {"main": account_config(fake, **account)}},
        )
        return await starter.start(config, stream=False, wrap=System, fake=fake, server=server)

    yield start
    await starter.close()


def button(card: Posted, label: str) -> str:
    return next(b["custom_id"] for row in card.components for b in row["components"]
                if b["label"] == label)


def buttons(card: Posted) -> list[dict[str, Any]]:
    return [b for row in card.components for b in row["components"]]


async def test_a_clarify_is_a_card_and_one_press_answers_it(start_system) -> None:
    system = await start_system()
    fake, server = system.discord, system.server

    card = await system.ask_weather(server.ada)
    paris = button(card, "Paris")  # the post loses its buttons once answered

    # On the bridge's own webhook, which its application owns (so it may carry buttons).
    assert card.author == "Rules" and fake.webhooks[card.webhook_id].application_id
    shown = buttons(card)
    assert [b["label"] for b in shown] == [*CITIES, "Answer in my own words", "Stop"]
    assert all(len(row["components"]) <= 5 for row in card.components)
    assert all(read_button_data(b["custom_id"]) is not None for b in shown)
    assert [b["style"] for b in shown[-2:]] == [2, 4]  # secondary, danger
    assert "Rules asks" in card.content and "depth 2/5" in card.content
    assert "closes <t:" in card.content  # a live countdown in every client

    press = fake.push_component(card.id, server.bob, button(card, "Tokyo"))

    assert await system.told(press) == "Answered: Tokyo"
    assert press.response == 4 and press.ephemeral
    [callback] = [c for c in fake.calls_to("interaction_callback")
                  if c.params["interaction"] == str(press.id)]
    assert callback.body["data"]["flags"] == EPHEMERAL
    response = await system.response_from_rules()
    assert response.status == "done" and "Tokyo" in response.result
    redrawn = await fake.wait_until(lambda: not fake.posted[card.id].components
                                    and fake.posted[card.id], WAIT)
    assert "answered by bob (discord): Tokyo" in redrawn.content
    assert "closes <t:" not in redrawn.content

    late = fake.push_component(card.id, server.ada, paris, unchecked=True)  # a stale client
    assert await system.told(late) == "Already answered by bob (discord): Tokyo."
    forged = fake.push_component(card.id, server.ada, "bcn:aaaaaaaaaaaaaaaa:0", unchecked=True)
    assert await system.told(forged) == "That button is not one of this chat's."
    conv = await system.app.relay.tracker.get(response.request_id)
    assert [entry.type for entry in conv.history].count("ANSWER") == 1


async def test_answers_by_role_lets_a_member_with_the_role_answer(
    start_system, fake: FakeDiscord, server: Server
) -> None:
    oncall = fake.add_role(server.guild, "oncall")
    carol = fake.add_member(server.guild, "carol")
    dan = fake.add_member(server.guild, "dan")
    server.guild.members[int(dan["id"])]["roles"] = [str(oncall)]
    system = await start_system(binding={"answers": [str(oncall)]})

    card = await system.ask_weather(server.ada)
    refused = fake.push_component(card.id, carol, button(card, "Paris"))
    assert await system.told(refused) == "This question is not yours to answer."
    assert fake.posted[card.id].components  # still open

    allowed = fake.push_component(card.id, dan, button(card, "Berlin"))
    assert await system.told(allowed) == "Answered: Berlin"
    assert "Berlin" in (await system.response_from_rules()).result


async def test_own_words_open_a_modal_whose_submit_answers(start_system) -> None:
    system = await start_system()
    fake, server = system.discord, system.server
    card = await system.ask_weather(server.ada)

    press = fake.push_component(card.id, server.ada, button(card, "Answer in my own words"))
    await fake.wait_until(lambda: press.response, WAIT)
    assert press.response == 9  # the modal is the press's first and only answer
    assert press.callback is not None and press.callback["custom_id"] == button(
        card, "Answer in my own words")

    submit = fake.submit_modal(press, server.ada, {"answer": "  Oslo,\n please "})

    assert await system.told(submit) == "Answered: Oslo, please"
    assert "Oslo" in (await system.response_from_rules()).result
    redrawn = await fake.wait_until(lambda: not fake.posted[card.id].components
                                    and fake.posted[card.id], WAIT)
    assert "answered by Ada (discord): Oslo, please" in redrawn.content


async def test_stop_closes_the_request_and_the_card_says_so(start_system) -> None:
    system = await start_system()
    fake, server = system.discord, system.server
    card = await system.ask_weather(server.ada)

    press = fake.push_component(card.id, server.bob, button(card, "Stop"))

    assert await system.told(press) == "Stopped."
    redrawn = await fake.wait_until(lambda: not fake.posted[card.id].components
                                    and fake.posted[card.id], WAIT)
    assert "stopped by bob (discord)" in redrawn.content


async def test_an_expired_question_answers_expired_and_loses_its_buttons(start_system) -> None:
    system = await start_system()
    fake, server = system.discord, system.server
    card = await system.ask_weather(server.ada)
    system.clock.advance(timedelta(minutes=11))  # a CLARIFY waits 10 minutes

    press = fake.push_component(card.id, server.bob, button(card, "Paris"))

    assert await system.told(press) == "This question has expired."
    redrawn = await fake.wait_until(lambda: not fake.posted[card.id].components
                                    and fake.posted[card.id], WAIT)
    assert "This question has expired." in redrawn.content


async def test_without_a_webhook_the_bot_posts_the_card_itself(start_system) -> None:
    system = await start_system(binding={"display": "prefix"})
    fake, server = system.discord, system.server

    card = await system.ask_weather(server.ada)

    assert card.webhook_id is None and card.author == fake.bot["username"]
    press = fake.push_component(card.id, server.bob, button(card, "Sydney"))
    assert await system.told(press) == "Answered: Sydney"
    redrawn = await fake.wait_until(lambda: not fake.posted[card.id].components
                                    and fake.posted[card.id], WAIT)
    assert redrawn.content.startswith("**Rules**")
    assert "answered by bob (discord): Sydney" in redrawn.content


def a_card(**fields: Any) -> Card:
    return Card(key="abcdefghijklmnop", decision="d1", request_id="rules-1",
                question="Which city?", asker="Rules", requester="Ada", requester_id=None,
                depth=(2, 5), deadline=datetime(2026, 1, 1, tzinfo=UTC),
                options=tuple(f"City {n}" for n in range(10)), **fields)


async def test_a_card_in_a_thread_is_redrawn_there_from_the_chat_alone(
    fake: FakeDiscord, server: Server, make_adapter
) -> None:
    """The core's redraw names the chat only; the adapter remembers the post's thread."""
    thread = fake.add_thread(server.guild, server.general, "planning")
    adapter = await make_adapter(bindings=[binding(server.general)])
    card = a_card()

    ref = await adapter.send(outbound("Which city?", server.general, thread_id=str(thread),
                                      card=card))
    posted = fake.posted[int(ref.message_id)]
    assert posted.channel_id == thread
    assert [len(row["components"]) for row in posted.components] == [5, 5, 2]

    settled = card.settled("answered", "answered by Ada (discord): City 3")
    await adapter.edit(PlatformRef(str(server.general), ref.message_id),
                       outbound("Which city?", server.general, card=settled))

    assert posted.components == [] and posted.content.endswith("City 3")
    [edit] = fake.calls_to("edit_webhook_message")
    assert edit.query["thread_id"] == str(thread) and edit.body["components"] == []


async def test_a_webhook_no_application_owns_cannot_carry_buttons(
    fake: FakeDiscord, server: Server
) -> None:
    """The fake holds the adapter to Discord's rule (why the bridge uses its own webhooks)."""
    import aiohttp

    hook = fake.add_user_webhook(server.general, server.ada)
    components = [{"type": 1, "components": [
        {"type": 2, "style": 1, "label": "Paris", "custom_id": "bcn:abcdefghijklmnop:0"}]}]
    url = f"{fake.api_url}/webhooks/{hook.id}/{hook.token}?wait=1&with_components=1"
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json={"content": "hi", "components": components}) as got:
            assert got.status == 400


async def posted_card(fake: FakeDiscord, adapter: Any, chat: int, **fields: Any) -> Posted:
    ref = await adapter.send(outbound("Which city?", chat, card=a_card(), **fields))
    return fake.posted[int(ref.message_id)]


async def test_a_press_is_a_tap_from_the_interactions_own_user_and_place(
    fake: FakeDiscord, server: Server, make_adapter
) -> None:
    """Who from the signed interaction (roles too), where from its channel: a thread of
    the bound channel is that chat's thread; the interaction id is the tap's id."""
    oncall = fake.add_role(server.guild, "oncall")
    server.guild.members[int(server.bob["id"])]["roles"] = [str(oncall)]
    thread = fake.add_thread(server.guild, server.general, "planning")
    adapter = await make_adapter(bindings=[binding(server.general)])
    taps: list[Tap] = []

    async def settle(tap: Tap) -> TapReply:
        taps.append(tap)
        return TapReply("Answered: City 1", accepted=True)

    adapter.taps = settle
    card = await posted_card(fake, adapter, server.general, thread_id=str(thread))
    data = button(card, "City 1")

    press = fake.push_component(card.id, server.bob, data)

    assert await fake.wait_until(lambda: fake.told(press), WAIT) == "Answered: City 1"
    [tap] = taps
    assert (tap.channel, tap.chat_id, tap.thread_id) == (
        "discord:main", str(server.general), str(thread))
    assert (tap.sender.id, tap.sender.name, tap.roles) == (server.bob["id"], "bob", (str(oncall),))
    assert (tap.data, tap.tap_id, tap.text) == (data, str(press.id), None)


async def test_a_slow_answer_is_deferred_then_followed_up(
    fake: FakeDiscord, server: Server, make_adapter, monkeypatch
) -> None:
    monkeypatch.setattr(cards, "ANSWER_WITHIN", 0.0)  # "slow": anything not already done
    adapter = await make_adapter(bindings=[binding(server.general)])
    release = asyncio.Event()

    async def settle(tap: Tap) -> TapReply:
        await release.wait()
        return TapReply("Answered: City 2", accepted=True)

    adapter.taps = settle
    card = await posted_card(fake, adapter, server.general)

    press = fake.push_component(card.id, server.ada, button(card, "City 2"))
    await fake.wait_until(lambda: press.response, WAIT)
    assert press.response == 5 and press.ephemeral  # "thinking…", privately, within 3 s
    release.set()

    assert await fake.wait_until(lambda: fake.told(press), WAIT) == "Answered: City 2"
    assert fake.posted[press.original].ephemeral


async def test_a_failing_core_is_answered_never_raised(
    fake: FakeDiscord, server: Server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    card = await posted_card(fake, adapter, server.general)

    unset = fake.push_component(card.id, server.ada, button(card, "City 0"))
    assert "not ready" in await fake.wait_until(lambda: fake.told(unset), WAIT)

    async def broken(tap: Tap) -> TapReply:
        raise RuntimeError("store down")

    adapter.taps = broken
    press = fake.push_component(card.id, server.ada, button(card, "City 0"))
    assert await fake.wait_until(lambda: fake.told(press), WAIT) == cards.TRY_AGAIN


async def test_own_words_open_the_modal_even_when_the_core_is_slow_to_say(
    fake: FakeDiscord, server: Server, make_adapter, monkeypatch
) -> None:
    monkeypatch.setattr(cards, "OWN_WORDS_CHECK", 0.0)
    adapter = await make_adapter(bindings=[binding(server.general)])
    texts: list[str | None] = []

    async def settle(tap: Tap) -> TapReply:
        texts.append(tap.text)
        if tap.text is None:
            await asyncio.sleep(0.2)  # slower than the check waits
            return TapReply("Type your answer.", wants_own_words=True)
        return TapReply(f"Answered: {tap.text}", accepted=True)

    adapter.taps = settle
    card = await posted_card(fake, adapter, server.general)
    press = fake.push_component(card.id, server.ada, button(card, "Answer in my own words"))
    await fake.wait_until(lambda: press.response, WAIT)
    assert press.response == 9

    submit = fake.submit_modal(press, server.ada, {"answer": "Lisbon"})

    assert await fake.wait_until(lambda: fake.told(submit), WAIT) == "Answered: Lisbon"
    assert texts[-1] == "Lisbon"


async def test_ask_as_a_slash_command_gets_its_card_in_the_channel(start_system) -> None:
    system = await start_system()
    fake, server = system.discord, system.server
    await fake.wait_until(lambda: fake.commands.get(server.guild.id), WAIT)

    fake.push_interaction(server.general, server.ada, "ask", {"bot": "Rules", "task": "weather"})
    card = await fake.wait_until(lambda: next(
        (post for post in fake.posted.values() if post.components), None), WAIT)

    assert not card.ephemeral and card.author == "Rules"  # everyone sees it, anyone may press
    press = fake.push_component(card.id, server.bob, button(card, "London"))
    assert await system.told(press) == "Answered: London"


@pytest.fixture
async def two_instances(tmp_path: Path, fake: FakeDiscord, server: Server, redis_server: str
                        ) -> AsyncIterator[tuple[BridgeStarter, list[System]]]:
    """Two instances of one bridge on one Redis: one runs the gateway (so Discord sends it
    the interactions), the other stands by to take it over."""
    config = bridge_config(
        tmp_path,
        bindings=[{"channel": "discord:main", "chat": str(server.general), "group": "demo",
                   "protocol": {"enabled": True, "deliver": "raw"}}],
        accounts={"discord": {"main": account_config(fake)}},
    )
    starter = BridgeStarter(tmp_path)
    async with prefixed(redis_server) as store:
        configs = instances_of(config, store, await starter.start_hub(config))
        systems = await starter.start_instances(configs, stream=False, wrap=System, fake=fake,
                                                server=server)
        try:
            yield starter, systems
        finally:
            await starter.close()


def gateway_of(system: System) -> Any:
    [adapter] = system.app.adapters
    return adapter


async def test_a_press_through_the_instance_that_took_over_is_told_who_answered(
    two_instances: tuple[BridgeStarter, list[System]],
) -> None:
    """Discord sends an interaction to the gateway session of its shard, which one instance
    runs: a press reaches another instance once that one has taken the gateway over. The
    card's decision is in the shared store, so the new holder knows it was answered."""
    starter, systems = two_instances
    fake = systems[0].discord
    holder = await fake.wait_until(
        lambda: next((s for s in systems if gateway_of(s).running_shards()), None), WAIT)
    [standby] = [s for s in systems if s is not holder]

    card = await holder.ask_weather(holder.server.ada)
    await standby.wait_delivered()
    paris = button(card, "Paris")
    first = fake.push_component(card.id, holder.server.bob, button(card, "Tokyo"))
    assert await holder.told(first) == "Answered: Tokyo"
    response = await holder.response_from_rules()
    assert "Tokyo" in response.result
    await fake.wait_until(lambda: not fake.posted[card.id].components, WAIT)

    await starter.stop(holder)  # an orderly stop hands the gateway over
    await fake.wait_until(lambda: gateway_of(standby).running_shards(), WAIT)
    late = fake.push_component(card.id, standby.server.ada, paris, unchecked=True)
    assert await standby.told(late) == "Already answered by bob (discord): Tokyo."
    conversation = await standby.app.relay.tracker.get(response.request_id)
    assert [entry.type for entry in conversation.history].count("ANSWER") == 1
