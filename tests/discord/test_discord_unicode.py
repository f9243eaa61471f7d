"""Discord is a door (issue 31 item 1): a gateway message whose JSON carries an escaped lone
surrogate — in its content and its author's names — reaches the core as valid Unicode
(U+FFFD where the surrogate was), and the gateway goes on relaying the next message.

The fake gateway writes its frames with `json.dumps`, which escapes a lone surrogate of the
text it is given: `"a\\ud800b"`, ASCII on the wire, as a client of Discord's could send it.
Real discord.py reads it, as it reads Discord.
"""

from __future__ import annotations

import discord.utils
from discord_support import Received, Server, binding

from adapters.discord import endpoints
from tests.fakes.discord import FakeDiscord


async def test_a_message_with_a_lone_surrogate_arrives_as_u_fffd_and_the_next_follows(
    fake: FakeDiscord, server: Server, make_adapter, received: Received
) -> None:
    await make_adapter(bindings=[binding(server.general)])
    odd = fake.add_member(server.guild, "m\ud800l", global_name="Mal\udc00lory",
                          nick="Mal\ud800")

    fake.push_message(server.general, odd, "a\ud800b")
    fake.push_message(server.general, server.ada, "and the next one")
    first, second = await received.next(), await received.next()

    assert first.text == "a\ufffdb"
    assert first.sender.name == "Mal\ufffd"
    assert first.sender.id == odd["id"]
    assert (second.text, second.sender.name) == ("and the next one", "Ada")


def test_discord_py_reads_json_through_the_door_only_while_an_account_runs() -> None:
    """The reader is process-wide, like the addresses: claimed with them, given back."""
    own = discord.utils._from_json
    endpoints.claim("http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9/gw")
    try:
        assert discord.utils._from_json('{"t":"a\\ud800b"}') == {"t": "a\ufffdb"}
    finally:
        endpoints.release()
    assert discord.utils._from_json is own
