"""The Matrix tests' homeserver, people and bridges: a real Synapse for the session, people
driven through mautrix's client API, and whole bridges whose push listener sits on the port
the registration names."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from mautrix.api import Method
from mautrix.api import Path as ApiPath
from mautrix.client import ClientAPI

from adapters.matrix import MatrixAccountConfig
from adapters.matrix.registration import registration
from bridge.config.schema import BridgeConfig
from tests.support.bridge_process import free_port
from tests.support.running_bridge import WAIT, BridgeStarter, RunningBridge, bridge_config
from tests.support.synapse import SERVER_NAME, Synapse, start_synapse

for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(
        filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"]))

AS_TOKEN = "as-token-of-the-test-bridge-0123456789"
HS_TOKEN = "hs-token-of-the-test-homeserver-9876543210"
BRIDGE_USER = f"@bcn_bridge:{SERVER_NAME}"

pytestmark = pytest.mark.matrix


@dataclass
class Homeserver:
    synapse: Synapse
    listen_port: int
    users: dict[str, dict[str, Any]] = field(default_factory=dict)

    def account(self, **overrides: Any) -> MatrixAccountConfig:
        homeserver = overrides.pop("homeserver", self.synapse.url)
        return account_config(homeserver, self.listen_port, **overrides)

    def user(self, localpart: str) -> dict[str, Any]:
        """A person's account (registered once per session)."""
        if localpart not in self.users:
            self.users[localpart] = self.synapse.register(localpart)
        return self.users[localpart]


def account_config(homeserver: str, port: int, **overrides: Any) -> MatrixAccountConfig:
    return MatrixAccountConfig.model_validate({
        "homeserver": homeserver, "server_name": SERVER_NAME, "as_token": AS_TOKEN,
        "hs_token": HS_TOKEN, "listen": f"127.0.0.1:{port}", "bot_localpart": "bcn_bridge",
        "puppet_prefix": "bcn_", "request_timeout": 10, **overrides})


@pytest.fixture(scope="session")
def homeserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Homeserver]:
    folder = tmp_path_factory.mktemp("synapse")
    port = free_port()
    path = folder / "registration.yaml"
    path.write_text(yaml.safe_dump(registration(account_config("http://127.0.0.1:1", port))),
                    encoding="utf-8")
    synapse = start_synapse(folder / "hs", path)
    try:
        yield Homeserver(synapse, port)
    finally:
        synapse.stop()


class Person:
    """A human on the homeserver, through mautrix's client API (raw JSON in, raw JSON out)."""

    def __init__(self, homeserver: Homeserver, localpart: str) -> None:
        user = homeserver.user(localpart)
        self.user_id: str = user["user_id"]
        self.client = ClientAPI(self.user_id, base_url=homeserver.synapse.url,
                                token=user["access_token"])

    async def close(self) -> None:
        await self.client.api.session.close()

    async def request(self, method: Method, path: Any, content: Any = None,
                      **query: str) -> Any:
        return await self.client.api.request(method, path, content, query_params=query)

    async def create_room(self, *, invite: list[str] = (), name: str = "Team room") -> str:  # type: ignore[assignment]
        answer = await self.request(Method.POST, ApiPath.v3.createRoom,
                                    {"preset": "private_chat", "name": name,
                                     "invite": list(invite)})
        return str(answer["room_id"])

    async def set_name(self, name: str) -> None:
        await self.request(Method.PUT, ApiPath.v3.profile[self.user_id].displayname,
                           {"displayname": name})

    async def invite(self, room_id: str, user_id: str) -> None:
        await self.request(Method.POST, ApiPath.v3.rooms[room_id].invite, {"user_id": user_id})

    async def join(self, room_id: str) -> None:
        await self.request(Method.POST, ApiPath.v3.join[room_id], {})

    async def send(self, room_id: str, content: dict[str, Any]) -> str:
        answer = await self.request(
            Method.PUT, ApiPath.v3.rooms[room_id].send["m.room.message"][os.urandom(8).hex()],
            content)
        return str(answer["event_id"])

    async def say(self, room_id: str, text: str, **extra: Any) -> str:
        return await self.send(room_id, {"msgtype": "m.text", "body": text, **extra})

    async def events(self, room_id: str) -> list[dict[str, Any]]:
        """The room's timeline, oldest first (the last 500 events)."""
        answer = await self.request(Method.GET, ApiPath.v3.rooms[room_id].messages,
                                    dir="b", limit="500")
        return list(reversed(answer["chunk"]))

    async def joined(self, room_id: str) -> set[str]:
        answer = await self.request(Method.GET, ApiPath.v3.rooms[room_id].joined_members)
        return set(answer["joined"])

    async def wait_for(self, room_id: str, predicate: Callable[[list[dict[str, Any]]], Any],
                       timeout: float = WAIT) -> Any:
        """Until `predicate(the room's events)` is truthy; its value."""
        async with asyncio.timeout(timeout):
            while True:
                found = predicate(await self.events(room_id))
                if found:
                    return found
                await asyncio.sleep(0.05)


def messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `m.room.message` events that are not edits."""
    return [e for e in events if e["type"] == "m.room.message"
            and (e["content"].get("m.relates_to") or {}).get("rel_type") != "m.replace"]


def edits_of(events: list[dict[str, Any]], event_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "m.room.message"
            and (e["content"].get("m.relates_to") or {}).get("rel_type") == "m.replace"
            and e["content"]["m.relates_to"].get("event_id") == event_id]


def shown_text(events: list[dict[str, Any]], message: dict[str, Any]) -> str:
    """What a client shows for `message`: its latest replacement's new content, if any."""
    edits = [e for e in edits_of(events, message["event_id"])
             if e["sender"] == message["sender"]]
    if edits:
        return str(edits[-1]["content"]["m.new_content"]["body"])
    return str(message["content"]["body"])


def bot_messages(events: list[dict[str, Any]], user_id: str) -> list[tuple[dict[str, Any], str]]:
    """The messages `user_id` posted, each with the text a client shows for it."""
    return [(m, shown_text(events, m)) for m in messages(events) if m["sender"] == user_id]


@dataclass
class System(RunningBridge):
    """A whole bridge (embedded hub, relay, example bots) with `matrix:main` bound to a room."""

    room_id: str = ""


StartSystem = Callable[..., Awaitable[System]]


def matrix_config(tmp_path: Path, homeserver: Homeserver, room_id: str, *,
                  deliver: str = "raw", binding: dict[str, Any] | None = None,
                  **account: Any) -> BridgeConfig:
    return bridge_config(
        tmp_path,
        bindings=[{"channel": "matrix:main", "chat": room_id, "group": "demo",
                   "protocol": {"enabled": True, "deliver": deliver}, **(binding or {})}],
        accounts={"matrix": {"main": homeserver.account(**account)}},
    )


@pytest.fixture
async def start_system(tmp_path: Path, homeserver: Homeserver) -> AsyncIterator[StartSystem]:
    starter = BridgeStarter(tmp_path)

    async def start(room_id: str, *, bots: bool = True, stream: bool = True,
                    **settings: Any) -> System:
        config = matrix_config(tmp_path, homeserver, room_id, **settings)
        return await starter.start(config, bots=bots, stream=stream, wrap=System,
                                   room_id=room_id)

    yield start
    await starter.close()


@pytest.fixture
async def ada(homeserver: Homeserver) -> AsyncIterator[Person]:
    person = Person(homeserver, "ada")
    await person.set_name("Ada")
    yield person
    await person.close()
