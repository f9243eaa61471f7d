"""The Matrix adapter's pure parts and its error mapping, without a homeserver."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from matrix_support import AS_TOKEN, HS_TOKEN, account_config
from mautrix.api import Method, Path
from mautrix.appservice import AppServiceAPI

import bridge.cli
from adapters.matrix.errors import RateLimitedResponse, send_error
from adapters.matrix.inbound import to_inbound, with_mentions
from adapters.matrix.outbound import edit_content, message_content
from adapters.matrix.puppets import puppet_localpart
from adapters.matrix.registration import registration
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.logs import REDACTOR
from bridge.text import StaticDirectory, matrix_html, to_platform

PILL = "https://matrix.to/#/"


def event(content: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "m.room.message", "event_id": "$e1", "room_id": "!r:localhost",
            "sender": "@ada:localhost", "origin_server_ts": 1_700_000_000_000,
            "content": content, **fields}


def inbound(content: dict[str, Any]):
    names = {"@bcn_echo:localhost": "Echo"}
    return to_inbound(event(content), account="main", chat_id="!r:localhost",
                      sender_name="Ada", name_of=names.get)


def test_pills_become_names_and_mentions() -> None:
    text, mentions = with_mentions(
        "Echo: ask @grace about it",
        f'<a href="{PILL}@bcn_echo:localhost">Echo</a>: ask '
        f'<a href="{PILL}%40grace%3Alocalhost">@grace</a> about it',
        {"@bcn_echo:localhost": "Echo", "@grace:localhost": "Grace"}.get)
    assert text == "@Echo: ask @Grace about it"
    assert mentions == ("Echo", "Grace")


def test_a_thread_reply_keeps_its_root_and_a_reply_names_its_message() -> None:
    threaded = inbound({"msgtype": "m.text", "body": "in it", "m.relates_to": {
        "rel_type": "m.thread", "event_id": "$root", "is_falling_back": True,
        "m.in_reply_to": {"event_id": "$root"}}})
    assert threaded is not None
    assert threaded.thread_id == "$root" and threaded.reply_to is None
    reply = inbound({"msgtype": "m.text", "body": "> <@echo> what city?\n\nTokyo",
                     "m.relates_to": {"m.in_reply_to": {"event_id": "$q"}}})
    assert reply is not None and reply.reply_to == "$q" and reply.text == "Tokyo"


def test_an_edit_is_the_original_message_with_its_new_content() -> None:
    edited = inbound({"msgtype": "m.text", "body": "* fixed", "m.new_content": {
        "msgtype": "m.text", "body": "fixed"},
        "m.relates_to": {"rel_type": "m.replace", "event_id": "$orig"}})
    assert edited is not None
    assert (edited.is_edit, edited.message_id, edited.text) == (True, "$orig", "fixed")


def test_what_is_not_a_text_message_is_not_relayed() -> None:
    assert inbound({"msgtype": "m.image", "body": "cat.png"}) is None
    assert to_inbound(event({}, type="m.reaction"), account="main", chat_id="!r",
                      sender_name="Ada", name_of=lambda _: None) is None


def test_outbound_content_threads_and_replacements() -> None:
    content = message_content("hi", "<p>hi</p>", thread_id="$root")
    assert content["m.relates_to"] == {"rel_type": "m.thread", "event_id": "$root",
                                       "is_falling_back": True,
                                       "m.in_reply_to": {"event_id": "$root"}}
    edit = edit_content("$e", "final", "<p>final</p>")
    assert edit["m.new_content"] == {"msgtype": "m.text", "body": "final",
                                     "format": "org.matrix.custom.html",
                                     "formatted_body": "<p>final</p>"}
    assert edit["m.relates_to"] == {"rel_type": "m.replace", "event_id": "$e"}


def test_the_dialect_keeps_protocol_fences_and_draws_pills() -> None:
    directory = StaticDirectory({"Ada": "@ada:localhost"})
    body = to_platform("hi @Ada\n\n```\n[REQUEST → @Echo]\nTask: x\n```", "matrix", directory)
    assert body.startswith("hi @Ada") and "```\n[REQUEST → @Echo]" in body
    html = matrix_html(body, directory)
    assert f'<a href="{PILL}@ada:localhost">Ada</a>' in html
    assert "<pre><code>```\n[REQUEST → @Echo]" in html
    assert "<script>" not in matrix_html("<script>alert(1)</script>")


def test_puppet_ids_are_valid_localparts_apart_from_the_bridge_user() -> None:
    config = account_config("http://127.0.0.1:1", 1)
    assert puppet_localpart(config, "Echo") == "bcn_echo"
    assert puppet_localpart(config, "Dr Who!") == "bcn_dr=20who=21"
    assert puppet_localpart(config, "bridge") == "bcn_bridge_"  # never the bridge user


def test_the_registration_names_the_tokens_url_and_namespace() -> None:
    found = registration(account_config("http://127.0.0.1:1", 29333))
    assert found["as_token"] == AS_TOKEN and found["hs_token"] == HS_TOKEN
    assert found["url"] == "http://127.0.0.1:29333"
    assert found["sender_localpart"] == "bcn_bridge" and found["rate_limited"] is False
    assert found["namespaces"]["users"] == [{"exclusive": True,
                                             "regex": r"@bcn_.*:localhost"}]


def test_the_registration_command_prints_it(tmp_path, capsys) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(yaml.safe_dump({
        "hub": {"groups": [{"id": "g", "bots": ["Echo"]}]},
        "accounts": {"matrix": {"main": {
            "homeserver": "http://127.0.0.1:8008", "server_name": "localhost",
            "as_token_file": str(_secret(tmp_path, "as", AS_TOKEN)),
            "hs_token_file": str(_secret(tmp_path, "hs", HS_TOKEN))}}},
        "bindings": [{"channel": "matrix:main", "chat": "!room:localhost", "group": "g"}],
    }), encoding="utf-8")
    assert bridge.cli.main(["matrix", "registration", "-c", str(config)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["id"] == "bcn-bridge" and printed["as_token"] == AS_TOKEN
    assert printed["namespaces"]["users"][0]["regex"] == r"@bcn_.*:localhost"


def _secret(folder, name: str, value: str):
    path = folder / name
    path.write_text(value + "\n", encoding="utf-8")
    return path


@pytest.fixture
async def limited_homeserver() -> Any:
    """A homeserver stand-in that answers every call with one error."""
    answers: list[web.Response] = []

    async def handle(request: web.Request) -> web.Response:
        return answers.pop(0)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", answers
    await runner.cleanup()


async def test_429_waits_retry_after_ms_and_other_errors_map(limited_homeserver, caplog) -> None:
    url, answers = limited_homeserver
    answers += [
        web.json_response({"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests",
                           "retry_after_ms": 1500}, status=429),
        web.json_response({"errcode": "M_LIMIT_EXCEEDED", "error": "slow"}, status=429,
                          headers={"Retry-After": "3"}),
        web.json_response({"errcode": "M_FORBIDDEN", "error": "not in room"}, status=403),
        web.json_response({"errcode": "M_UNKNOWN", "error": "oops"}, status=502),
    ]
    caplog.set_level(logging.DEBUG)
    REDACTOR.add([AS_TOKEN])
    async with aiohttp.ClientSession(response_class=RateLimitedResponse) as session:
        api = AppServiceAPI(base_url=url, bot_mxid="@bcn_bridge:localhost", token=AS_TOKEN,
                            client_session=session, default_retry_count=0,
                            log=logging.getLogger("mautrix"))
        errors = []
        for _ in range(4):
            with pytest.raises(Exception) as raised:
                await api.request(Method.PUT, Path.v3.rooms["!r"].send["m.room.message"]["t"],
                                  {"body": "x"})
            errors.append(send_error(raised.value, "send"))
    assert isinstance(errors[0], TransientSendError) and errors[0].retry_after == 1.5
    assert isinstance(errors[1], TransientSendError) and errors[1].retry_after == 3.0
    assert isinstance(errors[2], PermanentSendError)
    assert isinstance(errors[3], TransientSendError) and errors[3].retry_after is None
    assert AS_TOKEN not in caplog.text
