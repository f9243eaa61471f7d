"""What the adapter base gives every platform: its config as its own model, each chat logged
once, one outage line each way, retries and reconnects with backoff, and platform commands
found through the registry. Plain objects, no platform library, no sockets."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

import bridge.core.adapter as adapter_module
from bridge.core.adapter import Adapter, Capabilities
from bridge.core.binding import Binding
from bridge.core.model import Outbound, PlatformRef


class KitAccount(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = "http://example.org"
    size: int = 3


class OtherShape(BaseModel):
    """Same fields, another model: what a test or an embedder may hand over."""

    url: str
    size: int


class KitAdapter(Adapter):
    channel_type: ClassVar[str] = "kit"
    capabilities: ClassVar[Capabilities] = Capabilities(dialect="plain", max_length=100)
    config_model: ClassVar[type[BaseModel]] = KitAccount
    settings: KitAccount

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, out: Outbound) -> PlatformRef:
        raise AssertionError("not used here")


async def ignore(_: object) -> None:
    return None


def kit(config: BaseModel | None = None) -> KitAdapter:
    return KitAdapter("main", config or KitAccount(), ignore)


# ---------------------------------------------------------------- settings


def test_settings_is_the_config_itself_when_it_is_the_adapters_model() -> None:
    config = KitAccount(size=5)
    adapter = kit(config)
    assert adapter.settings is config
    assert adapter.config is config


def test_settings_coerces_another_model_with_the_same_fields() -> None:
    adapter = kit(OtherShape(url="http://x.example", size=7))
    assert isinstance(adapter.settings, KitAccount)
    assert adapter.settings == KitAccount(url="http://x.example", size=7)
    assert adapter.config is adapter.settings


def test_settings_coercion_refuses_what_the_model_refuses() -> None:
    with pytest.raises(ValueError, match="size"):
        kit(OtherShape(url="http://x.example", size="many"))  # type: ignore[arg-type]


# ---------------------------------------------------------------- note_chat


def noted(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == __name__]


def test_each_chat_is_logged_once_with_the_id_to_bind(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=__name__)
    adapter = kit()
    adapter.use_bindings([Binding(channel="kit:main", chat="42", group="g")])

    for _ in range(3):
        adapter.note_chat("42", 'sees room 42 "Ops"')
        adapter.note_chat("7", 'sees room 7 "Lobby"')

    assert noted(caplog) == [
        'kit:main sees room 42 "Ops" (bound)',
        'kit:main sees room 7 "Lobby" (not bound; bind it with chat: "7")',
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == __name__)


def test_once_false_logs_again_and_first_sight_says_who_is_new(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=__name__)
    adapter = kit()
    assert adapter.first_sight("1") is True
    assert adapter.first_sight("1") is False
    adapter.note_chat("1", "was added to room 1", once=False)
    adapter.note_chat("1", "sees room 1")
    assert noted(caplog) == ['kit:main was added to room 1 (not bound; bind it with chat: "1")']


def test_the_chats_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter_module, "CHATS_REMEMBERED", 3)
    adapter = kit()
    for chat in ("a", "b", "c", "d"):
        assert adapter.first_sight(chat)
    assert len(adapter._chats_noted) == 3
    assert adapter.first_sight("a") is True  # the oldest was forgotten
    assert adapter.first_sight("d") is False


