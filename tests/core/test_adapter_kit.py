"""What the adapter base gives every platform: its config as its own model, each chat logged
once, one outage line each way, retries and reconnects with backoff, and platform commands
found through the registry. Plain objects, no platform library, no sockets."""

from __future__ import annotations

import logging
import sys
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

import bridge.core.adapter as adapter_module
from bridge.core.adapter import Adapter, Capabilities
from bridge.core.binding import Binding
from bridge.core.model import Outbound, PlatformRef
from bridge.core.outage import OutageTracker
from bridge.core.reconnect import Retrier
from bridge.core.registry import ADAPTERS, cli_modules, lazy_names
from bridge.retry import Backoff


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
    assert not hasattr(adapter, "config")  # one name for one object


def test_settings_coerces_another_model_with_the_same_fields() -> None:
    adapter = kit(OtherShape(url="http://x.example", size=7))
    assert isinstance(adapter.settings, KitAccount)
    assert adapter.settings == KitAccount(url="http://x.example", size=7)


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


# ---------------------------------------------------------------- OutageTracker


def tracker() -> OutageTracker:
    return OutageTracker("kit:main", lost="lost the socket", back="is connected again",
                         logger=logging.getLogger(__name__))


def test_an_outage_is_logged_once_each_way(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=__name__)
    health = tracker()
    assert health.up() is False and not health.is_down  # up while up: nothing to say

    assert health.down("refused") is True
    assert health.down("timed out") is False
    assert health.down("timed out") is False
    assert health.is_down and health.failures == 3 and health.reason == "timed out"
    assert health.up() is True
    assert health.up() is False
    assert not health.is_down and health.reason is None

    lines = [(r.levelno, r.getMessage()) for r in caplog.records
             if r.levelno > logging.DEBUG and r.name == __name__]
    assert lines == [
        (logging.WARNING, "kit:main lost the socket (refused); retrying until it is back"),
        (logging.INFO, "kit:main is connected again after 3 failed attempt(s)"),
    ]


def test_a_second_outage_is_logged_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=__name__)
    health = tracker()
    for _ in range(2):
        health.down("refused")
        health.up()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2


# ---------------------------------------------------------------- retries and reconnects


class Sleeps:
    """An injected sleep: records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def steady_backoff() -> Backoff:
    return Backoff(initial=1.0, maximum=4.0, factor=2.0, jitter=0.0)


class Flaky(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def test_until_done_waits_with_backoff_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=__name__)
    sleeps, health = Sleeps(), tracker()
    failures = [Flaky("a"), Flaky("b"), Flaky("c"), Flaky("d", retry_after=9.0)]

    async def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    retrier = Retrier(health, retryable=lambda exc: isinstance(exc, Flaky),
                      backoff=steady_backoff(), sleep=sleeps)
    result = await retrier.until_done(attempt)

    assert result == "done"
    assert sleeps.delays == [1.0, 2.0, 4.0, 9.0]  # doubling, capped, a retry_after honoured
    assert [r.levelno for r in caplog.records if r.name == __name__] == [
        logging.WARNING, logging.INFO,
    ]
    assert not health.is_down


async def test_until_done_raises_what_may_not_be_retried() -> None:
    sleeps = Sleeps()

    async def attempt() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        await Retrier(tracker(), retryable=lambda e: False, sleep=sleeps).until_done(attempt)
    assert sleeps.delays == []


async def test_keep_connected_reconnects_with_backoff_until_refused() -> None:
    sleeps, health = Sleeps(), tracker()
    script = ["fail", "fail", "up-then-end", "up-then-fail", "closed-early", "refused"]
    seen_down: list[bool] = []

    async def serve(up: object) -> None:
        step = script.pop(0)
        seen_down.append(health.is_down)
        if step == "fail":
            raise Flaky("connection refused")
        if step.startswith("up"):
            up()  # type: ignore[operator]
            if step.endswith("fail"):
                raise Flaky("connection reset")
            return
        if step == "refused":
            raise PermissionError("token revoked")

    with pytest.raises(PermissionError):
        await Retrier(health, retryable=lambda exc: isinstance(exc, Flaky),
                      backoff=steady_backoff(), sleep=sleeps).keep_connected(serve)

    # Two failures (1 s, 2 s); a connection that worked and ended is reopened at once; one
    # that worked and then failed waits the first delay again (the backoff was reset); one
    # that closed before it worked counts as a failure too.
    assert sleeps.delays == [1.0, 2.0, 1.0, 2.0]
    assert seen_down == [False, True, True, False, True, True]


# ---------------------------------------------------------------- registry


def test_platform_commands_come_from_their_folders_without_their_libraries() -> None:
    found = cli_modules()
    assert {"discord", "slack"} <= set(found)
    assert found["discord"].__name__ == "adapters.discord.cli"
    assert set(found) <= set(ADAPTERS)
    assert "webchat" not in found  # no cli.py: no commands of its own


def test_lazy_names_import_on_first_use() -> None:
    getattr_ = lazy_names("bridge.core", Backoff="nothing_here", OutageTracker="outage")
    assert getattr_("OutageTracker") is OutageTracker
    with pytest.raises(AttributeError):
        getattr_("Unknown")
    assert "bridge.core.nothing_here" not in sys.modules
