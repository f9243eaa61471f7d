"""`bcn-bridge doctor` for Discord, against the fake: token, intents, bound channels."""

from __future__ import annotations

from discord_support import Server, account_config, binding

from adapters.discord import DiscordAdapter
from tests.fakes.discord import FakeDiscord
from tests.support.received import Received


async def diagnose(fake: FakeDiscord, chats: list[int], **overrides: object) -> list:
    adapter = DiscordAdapter("main", account_config(fake, **overrides), Received())
    adapter.use_bindings([binding(chat) for chat in chats])
    return await adapter.diagnose()


async def test_a_working_account_passes_every_check(fake: FakeDiscord, server: Server) -> None:
    found = await diagnose(fake, [server.general], members_intent=True)
    assert [d.status for d in found] == ["ok"] * 4
    assert "logged in as Bridge" in found[0].what
    assert "sees channel" in found[-1].what and "#general" in found[-1].what
    assert not fake.sessions  # no gateway was opened: safe beside a running bridge


async def test_each_problem_is_one_line_with_its_fix(fake: FakeDiscord, server: Server) -> None:
    fake.privileged_enabled.discard("message_content")
    found = await diagnose(fake, [server.general, 424242424242424242])
    failed = [d for d in found if d.status == "fail"]
    assert len(failed) == 2
    assert "Message Content Intent is off" in failed[0].what and "Privileged" in failed[0].fix
    assert "cannot see channel 424242424242424242" in failed[1].what
    assert "invite-url" in failed[1].fix


async def test_a_rejected_token_says_which_key_to_fix(fake: FakeDiscord, server: Server) -> None:
    [found] = await diagnose(fake, [server.general], token="not-the-token")
    assert found.status == "fail" and "rejected the bot token" in found.what
    assert "accounts.discord.main.token" in found.fix
    assert "not-the-token" not in found.what + found.fix


async def test_health_is_down_until_logged_in(make_adapter, server: Server) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)], start=False)
    assert adapter.health() is not None
    await adapter.start()
    adapter.started = True  # what the relay marks once start() returned
    assert adapter.health() is None
