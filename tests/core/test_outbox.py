"""The outbox on its own: order, retries, give-ups, resume after restart, streaming edits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import ClassVar

import pytest
from pydantic import BaseModel

from bridge.core import outbox as outbox_module
from bridge.core.adapter import Adapter, Capabilities, PermanentSendError, TransientSendError
from bridge.core.binding import Binding
from bridge.core.model import Outbound, PlatformRef
from bridge.core.outbox import Lane, Outbox
from bridge.store import open_store
from bridge.store.relay import OutboxItem
from tests.support.counted import CountedCalls

LANE = Lane("fake:main", "room")
BINDING = Binding(channel="fake:main", chat="room", group="g")


class NoSettings(BaseModel):
    pass


class Platform(Adapter):
    """Scripted failures per text; records what got through."""

    channel_type: ClassVar[str] = "fake"
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="plain", max_length=100, can_edit=True, min_edit_interval=0.0
    )
    config_model: ClassVar[type[BaseModel]] = NoSettings

    def __init__(self) -> None:
        super().__init__("main", NoSettings(), self._ignore)
        self.posted: list[str] = []
        self.edits: list[tuple[str, str]] = []
        self.failures: dict[str, list[Exception]] = {}

    @staticmethod
    async def _ignore(_: object) -> None:
        return None

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, out: Outbound) -> PlatformRef:
        pending = self.failures.get(out.text)
        if pending:
            raise pending.pop(0)
        self.posted.append(out.text)
        return PlatformRef(out.binding.chat, f"m{len(self.posted)}")

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        self.edits.append((ref.message_id, out.text))


def item(*parts: str, kind: str = "final", run_id: str | None = None) -> OutboxItem:
    return OutboxItem(lane=LANE.key, kind=kind, sender_label="Bot", parts=list(parts),
                      run_id=run_id)


def clock() -> datetime:
    return datetime(2026, 11, 29, tzinfo=UTC)


async def drain(outbox: Outbox) -> None:
    async with asyncio.timeout(10):
        await outbox.wait_idle()


@pytest.fixture
async def store(tmp_path):
    async with open_store(f"sqlite:///{tmp_path / 'out.db'}") as opened:
        yield opened


async def test_transient_failures_delay_but_keep_order_and_lose_nothing(store) -> None:
    platform = Platform()
    platform.failures["first"] = [TransientSendError("429", retry_after=0.01)] * 3
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock, retry_initial=0.001)
    for text in ("first", "second", "third"):
        await outbox.put(item(text))
    await drain(outbox)
    assert platform.posted == ["first", "second", "third"]
    assert await store.outbox.pending() == []
    await outbox.stop()


async def test_permanent_and_unclassified_failures_skip_one_output_only(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "UNCLASSIFIED_ATTEMPTS", 2)
    platform = Platform()
    platform.failures["gone"] = [PermanentSendError("chat not found")]
    platform.failures["buggy"] = [ValueError("adapter bug")] * 10
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock, retry_initial=0.001)
    for text in ("gone", "buggy", "fine"):
        await outbox.put(item(text))
    await drain(outbox)
    assert platform.posted == ["fine"]
    await outbox.stop()


async def test_a_restart_resumes_after_the_last_posted_part(store) -> None:
    platform = Platform()
    queued = item("part one", "part two", "part three")
    await store.outbox.append(queued)
    await store.outbox.record_part(queued.id, 0, "m-earlier")  # posted before a crash
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.start()
    await drain(outbox)
    assert platform.posted == ["part two", "part three"]
    await outbox.stop()


async def test_deltas_edit_one_message_and_the_final_replaces_it(store) -> None:
    platform = Platform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("Ana", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("Analysis", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("Analysis done", kind="final", run_id="r1"))
    await drain(outbox)
    assert platform.posted == ["Ana"]
    assert platform.edits == [("m1", "Analysis"), ("m1", "Analysis done")]
    await outbox.stop()


class DeletingPlatform(Platform):
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="plain", max_length=100, can_edit=True, can_delete=True, min_edit_interval=0.0
    )

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    async def delete(self, ref: PlatformRef) -> None:
        self.deleted.append(ref.message_id)


async def test_a_long_stream_previews_every_part_and_edits_only_the_changed_ones(store) -> None:
    platform = DeletingPlatform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("one", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("one full", "two", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("one full", "two more", kind="delta", run_id="r1"))
    await drain(outbox)
    assert platform.posted == ["one", "two"]
    # Part one is not edited again once its text stops changing.
    assert platform.edits == [("m1", "one full"), ("m2", "two more")]
    await outbox.put(item("one full", "two more", "three", kind="final", run_id="r1"))
    await drain(outbox)
    assert platform.posted == ["one", "two", "three"]
    assert platform.edits[-2:] == [("m1", "one full"), ("m2", "two more")]
    assert platform.deleted == []
    await outbox.stop()


async def test_a_final_shorter_than_its_preview_deletes_the_leftover_parts(store) -> None:
    platform = DeletingPlatform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("a", "b", "c", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("all in one", kind="final", run_id="r1"))
    await drain(outbox)
    assert platform.posted == ["a", "b", "c"]
    assert platform.edits == [("m1", "all in one")]
    assert platform.deleted == ["m3", "m2"]
    record = await store.message_map.get("stream:r1")
    assert record is not None and record["message_ids"] == ["m1"]
    await outbox.stop()


async def test_without_delete_the_leftover_parts_stay_and_nothing_fails(store) -> None:
    platform = Platform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("a", "b", kind="delta", run_id="r1"))
    await drain(outbox)
    await outbox.put(item("ab", kind="final", run_id="r1"))
    await drain(outbox)
    assert platform.edits == [("m1", "ab")]
    assert await store.outbox.pending() == []
    await outbox.stop()


async def test_a_stream_record_from_the_single_message_format_still_resumes(store) -> None:
    platform = Platform()
    await store.message_map.put(
        "stream:r1", {"chat_id": "room", "message_id": "m-old", "thread_id": None}, clock()
    )
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("done", kind="final", run_id="r1"))
    await drain(outbox)
    assert platform.edits == [("m-old", "done")]
    assert platform.posted == []
    await outbox.stop()


async def test_an_instance_without_the_account_leaves_its_lane_to_one_that_has_it(store) -> None:
    """Two instances on one store; only one has the account (a webchat served by one process).
    The other neither posts the lane's outputs nor drops them."""
    platform = Platform()
    without = Outbox(store.outbox, store.message_map, lambda lane: None, clock=clock,
                     leases=store.leases, holder="instance-b", orphan_scan=0.01)
    scans = 0
    adopt = without._adopt_lanes

    async def counted_scan() -> None:
        nonlocal scans
        await adopt()
        scans += 1

    without._adopt_lanes = counted_scan  # type: ignore[method-assign]
    await store.outbox.append(item("for the instance with the account"))
    await without.start()  # adopts every queued lane it finds
    await drain(without)
    async with asyncio.timeout(5):  # three orphan scans, each trying the lane again
        while scans < 3:
            await asyncio.sleep(0.005)
    await drain(without)
    assert [i.parts for i in await store.outbox.pending()] == [
        ["for the instance with the account"]
    ]
    assert await store.leases.holder(f"lane:{LANE.key}") is None  # never taken
    with_account = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                          clock=clock, leases=store.leases, holder="instance-a")
    await with_account.start()
    await drain(with_account)
    assert platform.posted == ["for the instance with the account"]
    await without.stop()
    await with_account.stop()


async def test_a_stream_begun_by_one_instance_is_finished_by_another_in_place(store) -> None:
    """The instance that streamed the preview dies; the next one edits the same messages."""
    platform = Platform()
    first = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                   clock=clock, leases=store.leases, holder="instance-a", linger=0)
    await first.put(item("half of the reply", kind="delta", run_id="r1"))
    await drain(first)
    await first.stop()  # gone (its lane lease released or expired)
    second = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock, leases=store.leases, holder="instance-b", linger=0)
    await second.put(item("half of the reply, and the rest", kind="final", run_id="r1"))
    await drain(second)
    assert platform.posted == ["half of the reply"]  # posted once, by the first
    assert platform.edits == [("m1", "half of the reply, and the rest")]
    await second.stop()


async def test_a_chat_of_one_reply_at_a_time_costs_one_read_per_reply(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a lone item the worker waits for the next instead of reading the empty lane."""
    # The waiting worker's poll for other instances' items reads too; however slow the
    # machine, none falls inside this test.
    monkeypatch.setattr(outbox_module, "LINGER_POLL", 3600.0)
    platform = Platform()
    counted = CountedCalls(store.outbox, "pending")
    outbox = Outbox(counted, store.message_map, lambda lane: (platform, BINDING), clock=clock)
    for n in range(20):
        await outbox.put(item(f"reply {n}"))
        await drain(outbox)
    assert platform.posted == [f"reply {n}" for n in range(20)]
    assert counted.calls["pending"] <= 20 + 1  # two a reply before
    await outbox.stop()


async def test_an_item_another_instance_queues_into_a_waiting_lane_is_sent(store) -> None:
    """Not told (it was not put here), the waiting worker finds it by its poll."""
    platform = Platform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.put(item("ours"))
    await drain(outbox)
    await store.outbox.append(item("queued by another instance"))
    async with asyncio.timeout(10):
        while platform.posted != ["ours", "queued by another instance"]:
            await asyncio.sleep(0.02)
    assert await store.outbox.pending() == []
    await outbox.stop()


async def test_a_lingering_wait_tells_a_real_wakeup_from_its_timer() -> None:
    wakeup = asyncio.Event()
    assert not await outbox_module._set_within(wakeup, 0.001)
    assert not wakeup.is_set()  # the timer's own set is taken back: the next wait is real
    asyncio.get_running_loop().call_soon(wakeup.set)
    assert await outbox_module._set_within(wakeup, 3600.0)
    assert wakeup.is_set()
    wakeup.set()
    assert await outbox_module._set_within(wakeup, 3600.0)  # set before the wait began


class HeldPlatform(Platform):
    """Posts only once `go` is set: the worker is inside a platform call meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.called = asyncio.Event()
        self.go = asyncio.Event()

    async def send(self, out: Outbound) -> PlatformRef:
        self.called.set()
        await self.go.wait()
        return await super().send(out)


async def test_a_lane_worker_whose_lease_passed_mid_post_cannot_mark_the_part(store) -> None:
    """Paused inside a platform call past its TTL (a GC pause, say) while another instance
    was granted the lane: the stale worker's write is refused by the fencing token, so the
    new holder's view of the lane (the part still unsent) stays the truth."""
    platform = HeldPlatform()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock, leases=store.leases, holder="instance-a", linger=0)
    await outbox.put(item("the reply"))
    async with asyncio.timeout(10):
        await platform.called.wait()
    name = f"lane:{LANE.key}"
    taken = await store.leases.take_over(name, "instance-a", "instance-b", ttl=60)
    assert taken is not None
    platform.go.set()
    async with asyncio.timeout(10):
        while LANE.key in outbox._working:  # the stale worker ends without marking
            await asyncio.sleep(0.01)
    [left] = await store.outbox.pending()
    assert left.sent == [None] and platform.posted == ["the reply"]
    assert await store.leases.holder(name) == "instance-b"
    await outbox.stop()


async def test_replies_show_in_the_order_the_bot_began_them_at_no_extra_call(store) -> None:
    """Three runs' first previews queued before any of their finals, the finals out of
    order (B finished first): each preview is moot, and each run shows at its first
    output's place — A, B, C — with its final, one post each, no preview and no edit. (Had
    the moot previews been skipped, the runs would show in their finals' order: B, A, C.)"""
    platform = Platform()
    queued = [item("A…", kind="delta", run_id="a"), item("B…", kind="delta", run_id="b"),
              item("C…", kind="delta", run_id="c"), item("B done", run_id="b"),
              item("A done", run_id="a"), item("C…more", kind="delta", run_id="c"),
              item("C done", run_id="c")]
    for each in queued:
        await store.outbox.append(each)
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (platform, BINDING),
                    clock=clock)
    await outbox.start()
    await drain(outbox)
    assert platform.posted == ["A done", "B done", "C done"]
    assert platform.edits == []
    assert await store.outbox.pending() == []
    await outbox.stop()
