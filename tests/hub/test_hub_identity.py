"""Nobody registers a bot name that reads as another bot's, over HTTP or `bot.connect`.

Invisible characters and mixed alphabets are refused outright (400, invalid_request); a
name that differs from an existing or config-listed bot only by case, accents, digits for
letters, look-alike letters or separators is refused as taken (409), with the name it
imitates in the message.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from hub_clients import StartHub, TestBot
from pydantic import ValidationError

from bridge.bcn import BcnError
from bridge.hub import Hub, HubConfig

REGISTER = "reg-token-0123456789"


@pytest.fixture
async def open_hub(start_hub: StartHub) -> Hub:
    return await start_hub(register_tokens=[REGISTER])


async def register(http: aiohttp.ClientSession, hub: Hub, name: str) -> tuple[int, Any]:
    async with http.post(hub.http_url + "/register",
                         params={"token": REGISTER, "bot-name": name}) as response:
        return response.status, await response.json()


@pytest.mark.parametrize("name, why", [
    ("Ru\u200bles", "invisible characters (U+200B)"),
    ("Rul\u200des", "invisible characters (U+200D)"),
    ("\u2066Rules\u2069", "invisible characters (U+2066, U+2069)"),
    ("Rul\u0435s", "not a mix of Cyrillic and Latin"),
    ("\u0391lpha", "not a mix of Greek and Latin"),
])
async def test_invisible_and_mixed_names_are_refused(
    http: aiohttp.ClientSession, open_hub: Hub, name: str, why: str
) -> None:
    status, body = await register(http, open_hub, name)
    assert status == 400 and body["error"] == "bad_request"
    assert why in body["message"]
    with pytest.raises(BcnError) as refused:
        await TestBot.connect(http, open_hub, name=name)
    assert refused.value.code == "invalid_request" and why in refused.value.message


@pytest.mark.parametrize("name", [
    "rules", "RULES", "Ru1es", "RuIes", "Rúles", "Ｒｕｌｅｓ", "Ru_les", "R u l e s", "𝐑𝐮𝐥𝐞𝐬",
])
async def test_look_alikes_of_a_registered_bot_are_taken(
    http: aiohttp.ClientSession, open_hub: Hub, name: str
) -> None:
    assert (await register(http, open_hub, "Rules"))[0] == 200
    status, body = await register(http, open_hub, name)
    assert status == 409 and body["error"] == "conflict"
    assert "Rules" in body["message"]
    with pytest.raises(BcnError) as refused:
        await TestBot.connect(http, open_hub, name=name)
    assert refused.value.code == "invalid_request" and "Rules" in refused.value.message


async def test_a_config_listed_name_is_kept_for_its_bot(
    http: aiohttp.ClientSession, open_hub: Hub
) -> None:
    """`Mantis` is listed in group grp and not registered yet: only that exact name gets it."""
    with pytest.raises(BcnError) as refused:
        await TestBot.connect(http, open_hub, name="Mant1s")
    assert "looks like the bot 'Mantis'" in refused.value.message
    bot = await TestBot.connect(http, open_hub, name="Mantis")
    assert bot.payload["name"] == "Mantis"
    await bot.close()


async def test_clearly_different_names_still_register(
    http: aiohttp.ClientSession, open_hub: Hub
) -> None:
    for name in ("Rules", "Ruler", "Röntgen", "Мастер", "GPT助手", "ボット"):
        status, body = await register(http, open_hub, name)
        assert status == 200, body
        assert body["bot_name"] == name


def test_config_refuses_invisible_and_mixed_bot_names(tmp_path: Any) -> None:
    for name in ("Hel\u200bper", "H\u0435lper"):
        with pytest.raises(ValidationError, match="pose as another"):
            HubConfig.model_validate({"data_dir": str(tmp_path),
                                      "bots": [{"name": name, "token": "token-123456"}]})
