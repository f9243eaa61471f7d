"""Discord end to end: fake Discord ↔ real discord.py ↔ the bridge ↔ embedded hub ↔ bots."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from discord_support import Server, account_config

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.protocol import build_request, parse
from bridge.text import ZERO_WIDTH_SPACE
from tests.fakes.discord import FakeDiscord, Posted
from tests.support.running_bridge import WAIT, BridgeStarter, RunningBridge, bridge_config

LONG_CODE = "\n".join(f"line {n:03d} = compute({n})" for n in range(40))
LONG_REPLY = (
    "Here is the report.\n\n" + "word " * 330 + "\n\n```python\n" + LONG_CODE + "\n```\n\n"
    + "more " * 420 + "\nThe end."
)


@dataclass
class System(RunningBridge):
    fake: FakeDiscord | None = None
    server: Server | None = None

    @property
    def chat(self) -> int:
        assert self.server is not None
        return self.server.general

    async def shown(self, predicate: Callable[[list[Posted]], Any]) -> Any:
        """Wait until `predicate(what the bridge's posts show now)` is truthy."""
        fake = self.fake
        assert fake is not None
        return await fake.wait_until(lambda: predicate(fake.from_bridge(self.chat)), WAIT)

    async def relayed(self, message_id: str) -> bool:
        """Did the relay take this Discord message as an inbound one? (It asks the store.)"""
        relay = self.app.relay
        assert relay is not None
        key = f"in:discord:main|{self.chat}|{message_id}"
        return not await relay.ctx.store.seen.add(key, relay.ctx.clock())


@pytest.fixture
async def start_system(
    tmp_path: Path, fake: FakeDiscord, server: Server
) -> AsyncIterator[Callable[..., Any]]:
    starter = BridgeStarter(tmp_path)

    async def start(
        *, bots: bool = True, stream: bool = True, deliver: str = "raw",
        binding: dict[str, Any] | None = None, **account: Any,
    ) -> System:
        config = bridge_config(
            tmp_path,
            bindings=[{"channel": "discord:main", "chat": str(server.general), "group": "demo",
                       "protocol": {"enabled": True, "deliver": deliver}, **(binding or {})}],
            accounts={"discord": {"main": account_config(fake, **account)}},
        )
        return await starter.start(config, bots=bots, stream=stream, wrap=System, fake=fake,
                                   server=server)

    yield start
    await starter.close()


def by(posts: list[Posted], author: str) -> list[Posted]:
    return [post for post in posts if post.author == author]


def protocol_from(posts: list[Posted], author: str) -> list[str]:
    return [post.content for post in by(posts, author) if parse(post.content) is not None]


async def start_bot(system: System, tmp_path: Path, name: str, handler: Any) -> Bot:
    bot = Bot(f"{system.app.bcn_url.rstrip('/')}/ws/bot", name=name,
              token_file=tmp_path / f"{name}.token", on_message=handler)
    await bot.start(timeout=10)
    system.bots.append(bot)
    await system.wait_for_bots(name)
    return bot


async def test_a_human_message_gets_a_streamed_reply_under_the_bots_own_name(
    start_system,
) -> None:
    system = await start_system()
    fake, server = system.fake, system.server
    said = fake.push_message(server.general, server.ada, "hello there brave new world")

    [reply] = await system.shown(
        lambda posts: [p for p in by(posts, "Echo") if p.content == "hello there brave new world"]
    )

    assert reply.webhook_id in fake.webhooks and reply.edits >= 1  # posted, then edited
    assert len(fake.from_bridge(server.general)) == 1
    assert await system.relayed(said["id"])
    assert not await system.relayed(str(reply.id))  # its own echo never went back in
    assert fake.calls_to("typing")


async def test_a_protocol_request_from_another_discord_bot_is_answered(start_system) -> None:
    system = await start_system(deliver="natural")
    fake, server = system.fake, system.server
    block = build_request(to="Echo", from_="Lotbot", task="say banana",
                          request_id="lotbot-abc123", depth=(2, 5))
    fake.push_message(server.general, server.lotbot, block)

    [answer] = await system.shown(lambda posts: protocol_from(posts, "Echo"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Lotbot" and response.request_id == "lotbot-abc123"
    assert tuple(response.depth) == (3, 5)
    assert answer.startswith("```")  # fences stay literal text other bots can read


async def test_a_long_reply_is_split_at_the_limit_never_inside_a_code_block(
    start_system, tmp_path: Path
) -> None:
    system = await start_system(stream=False)

    async def write(message: IncomingMessage, run: Run) -> str:
        return LONG_REPLY

    await start_bot(system, tmp_path, "Writer", write)
    assert len(LONG_REPLY) >= 4500
    system.fake.push_message(system.chat, system.server.ada, "@Writer the report please")

    await system.shown(lambda posts: len(by(posts, "Writer")) >= 3)
    await system.wait_delivered()

    texts = [part.content for part in by(system.fake.from_bridge(system.chat), "Writer")]
    assert len(texts) == 3 and all(len(text) <= 2000 for text in texts)
    # A part that ends inside the code block closes its fence; the next one reopens it.
    assert all(text.count("```") % 2 == 0 for text in texts)
    code = [line for text in texts for line in text.splitlines() if line.startswith("line ")]
    assert code == LONG_CODE.splitlines()
    words = [w for text in texts for w in text.split() if w in ("word", "more")]
    assert words == [w for w in LONG_REPLY.split() if w in ("word", "more")]


async def test_a_reply_that_shrinks_deletes_its_leftover_parts(
    start_system, tmp_path: Path
) -> None:
    system = await start_system()
    fake = system.fake

    async def think_aloud(message: IncomingMessage, run: Run) -> str:
        for _ in range(6):
            await run.delta("thinking " * 60)
        # The preview of those 3,240 characters takes two messages; then the answer is short.
        await fake.wait_until(lambda: len(by(fake.from_bridge(system.chat), "Thinker")) == 2)
        return "Short answer: 42."

    await start_bot(system, tmp_path, "Thinker", think_aloud)
    fake.push_message(system.chat, system.server.ada, "@Thinker what is the answer?")

    [final] = await system.shown(
        lambda posts: [p.content for p in by(posts, "Thinker")] == ["Short answer: 42."]
        and by(posts, "Thinker")
    )

    assert final.edits >= 1
    assert system.fake.calls_to("delete_webhook_message")


async def test_everyone_in_a_bot_reply_pings_nobody(start_system) -> None:
    system = await start_system(stream=False)
    system.fake.push_message(system.chat, system.server.ada, "@everyone and @here: standup!")

    [reply] = await system.shown(lambda posts: by(posts, "Echo"))

    assert reply.content == f"@{ZERO_WIDTH_SPACE}everyone and @{ZERO_WIDTH_SPACE}here: standup!"
    assert reply.pinged == {"users": [], "roles": [], "everyone": False}
    [execute] = system.fake.calls_to("execute_webhook")
    assert execute.body["allowed_mentions"] == {"parse": [], "users": []}


async def test_the_bridge_carries_on_after_a_dropped_gateway(start_system) -> None:
    system = await start_system(stream=False)
    fake = system.fake
    fake.push_message(system.chat, system.server.ada, "before the drop")
    await system.shown(lambda posts: by(posts, "Echo"))

    await fake.drop_gateway()
    fake.push_message(system.chat, system.server.bob, "after the drop")

    await system.shown(lambda posts: "after the drop" in [p.content for p in by(posts, "Echo")])
    assert len(fake.resumes()) == 1 and len(fake.identifies()) == 1


async def test_restart_with_replies_queued_delivers_them_once(start_system) -> None:
    first = await start_system(stream=False, webhook_timeout=1)
    fake = first.fake
    fake.fail_always("execute_webhook", status=503)
    for n in range(3):
        fake.push_message(first.chat, first.server.ada, f"queued {n}")
    await first.wait_queued(3)
    await first.stop()
    assert fake.from_bridge(first.chat) == []

    fake.recover("execute_webhook")
    second = await start_system(bots=False)
    await second.shown(lambda posts: len(posts) == 3)
    await second.wait_delivered()

    posts = fake.from_bridge(second.chat)
    assert [(p.author, p.content) for p in posts] == [("Echo", f"queued {n}") for n in range(3)]


async def test_ask_as_a_slash_command_starts_a_tracked_request(start_system) -> None:
    system = await start_system()
    fake, server = system.fake, system.server
    await fake.wait_until(lambda: fake.commands.get(server.guild.id))

    interaction = fake.push_interaction(server.general, server.ada, "ask",
                                        {"bot": "Rules", "task": "what is 6 times 7"})
    [answer] = await system.shown(lambda posts: protocol_from(posts, "Rules"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Ada" and "42" in response.result
    [request] = [p for p in by(fake.from_bridge(server.general), "Ada")]
    assert parse(request.content).type == "REQUEST"  # posted under the human's name
    assert fake.interactions[interaction.id].response == 4
    conversation = await system.app.relay.tracker.get(response.request_id)
    assert conversation is not None and conversation.status == "done"


async def test_requests_as_a_slash_command_answers_only_the_caller(start_system) -> None:
    system = await start_system(bots=False)
    fake, server = system.fake, system.server
    await fake.wait_until(lambda: fake.commands.get(server.guild.id))

    interaction = fake.push_interaction(server.general, server.bob, "requests")
    await fake.wait_until(lambda: interaction.followups)

    answer = fake.posted[interaction.original]
    assert answer.content == "No open requests in this chat." and answer.ephemeral
    assert fake.from_bridge(server.general) == []


async def test_with_relay_edits_the_bots_hear_of_an_edit(start_system) -> None:
    system = await start_system(stream=False, binding={"relay_edits": True})
    fake = system.fake
    said = fake.push_message(system.chat, system.server.ada, "teh plan")
    await system.shown(lambda posts: by(posts, "Echo"))

    fake.push_edit(int(said["id"]), "the plan")

    replies = await system.shown(lambda posts: len(by(posts, "Echo")) == 2 and by(posts, "Echo"))
    assert [reply.content for reply in replies] == ["teh plan", "(edited) the plan"]


async def test_ask_from_a_person_with_a_spaced_name_gets_its_answer(start_system) -> None:
    """Issue 31 §2: the RESPONSE to "Grace Hopper" could not be built, so it never came."""
    system = await start_system()
    fake, server = system.fake, system.server
    grace = fake.add_member(server.guild, "grace", global_name="Grace Hopper")
    await fake.wait_until(lambda: fake.commands.get(server.guild.id))

    fake.push_interaction(server.general, grace, "ask",
                          {"bot": "Rules", "task": "what is 6 times 7"})
    [answer] = await system.shown(lambda posts: protocol_from(posts, "Rules"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Grace Hopper" and "42" in response.result
