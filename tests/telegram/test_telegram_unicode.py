"""A Telegram update with a lone UTF-16 surrogate reaches the core as valid Unicode (issue 31).

Real python-telegram-bot long-polls the fake Bot API and parses its JSON itself (so
`bridge.fastjson` is not its door): the escaped `\\ud800` on the wire is a lone surrogate in
its update, and `Inbound` — the one normalized message every platform makes — is where it
becomes U+FFFD.
"""

from __future__ import annotations

from telegram_support import GROUP, TOKEN, MakeAdapter, Received

from tests.fakes.telegram import FakeTelegram, user


async def test_a_lone_surrogate_in_an_update_reaches_the_core_as_the_replacement_character(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    fake.push_message(TOKEN, GROUP, user("Al\udc00ice", user_id=501), "a\ud800b")
    inbound = await received.next()
    assert inbound.text == "a\ufffdb"
    assert inbound.sender.name == "Al\ufffdice"
    fake.push_message(TOKEN, GROUP, user("Bob", user_id=502), "and the next one")
    assert (await received.next()).text == "and the next one"
