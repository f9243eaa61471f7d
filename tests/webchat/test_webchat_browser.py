"""The webchat page in headless Chromium, against a real WebServer and WebchatAdapter.

The adapter's sink is a small responder that answers the way the core would on a bot's
behalf: it streams a reply through `adapter.send` and `adapter.edit`, posts a protocol
RESPONSE, and updates the request panel.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from webchat_clients import OPEN_REQUEST

from adapters.webchat import WebchatAccountConfig, WebchatAdapter
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound, OutboundKind
from bridge.protocol import parse
from bridge.text.convert import to_platform
from bridge.web.server import WebServer
from tests.support.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

UI_WAIT_MS = 10_000
"""Upper bound for the page to show something; never asserted as a duration."""

pytestmark = BROWSER_MARKS

RESPONSE_BLOCK = """```
[RESPONSE → @Ada]
From: @Rules
RequestId: ada-1
Status: done
Result: 4
Depth: 2/5
```"""


class Responder:
    """Answers every human message like a bot relayed by the core would."""

    def __init__(self) -> None:
        self.adapter: WebchatAdapter | None = None
        self.received: asyncio.Queue[Inbound] = asyncio.Queue()
        self.delta_seen = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    async def sink(self, inbound: Inbound) -> None:
        await self.received.put(inbound)
        if inbound.text.startswith("@Rules"):
            task = asyncio.create_task(self.answer(inbound))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def outbound(self, inbound: Inbound, markdown: str, kind: OutboundKind) -> Outbound:
        binding = Binding(channel=inbound.channel, chat=inbound.chat_id, group="demo")
        parsed = parse(markdown)
        return Outbound(
            binding=binding,
            conversation="demo:channel_webchat_0000aaaa",
            sender_label="Rules",
            text=to_platform(markdown, "webchat"),
            kind=kind,
            run_id="run-1",
            protocol=parsed.to_dict() if parsed else None,
        )

    async def answer(self, inbound: Inbound) -> None:
        assert self.adapter is not None
        await self.adapter.update_requests(
            inbound.chat_id,
            [OPEN_REQUEST],
        )
        ref = await self.adapter.send(self.outbound(inbound, "Let me", OutboundKind.DELTA))
        await self.adapter.edit(ref, self.outbound(inbound, "Let me think…", OutboundKind.DELTA))
        await self.delta_seen.wait()
        await self.adapter.edit(
            ref, self.outbound(inbound, "**2 + 2 = 4**, <b>surely</b>.", OutboundKind.FINAL)
        )
        await self.adapter.send(self.outbound(inbound, RESPONSE_BLOCK, OutboundKind.FINAL))
        await self.adapter.update_requests(inbound.chat_id, [])


@pytest.fixture
async def chat() -> AsyncIterator[tuple[WebServer, WebchatAdapter, Responder]]:
    server = WebServer("127.0.0.1:0")
    responder = Responder()
    adapter = WebchatAdapter("main", WebchatAccountConfig(title="Demo chat"), responder.sink,
                             web=server)
    adapter.set_bound_rooms(["lobby"])
    responder.adapter = adapter
    await adapter.start()
    await server.start()
    yield server, adapter, responder
    for task in list(responder.tasks):
        task.cancel()
    await adapter.stop()
    await server.stop()


@pytest.fixture
def problems() -> list[str]:
    """Console errors and uncaught exceptions (CSP violations show up here too)."""
    return []


@pytest.fixture
async def page(problems: list[str]):
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1200, "height": 800})
            page = await context.new_page()
            page.set_default_timeout(UI_WAIT_MS)
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda error: problems.append(str(error)))
            yield page
        finally:
            await browser.close()


async def join(page, url: str, name: str = "Ada", room: str = "lobby") -> None:
    await page.goto(url)
    await page.get_by_label("Your name", exact=True).fill(name)
    await page.get_by_label("Room", exact=True).fill(room)
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#chat")).to_be_visible()
    await expect(page.locator("#status")).to_have_text("connected")


async def test_a_conversation_with_a_streaming_bot(chat, page, problems, tmp_path: Path) -> None:
    server, _, responder = chat
    await join(page, server.url + "/")
    await expect(page.locator("#room-label")).to_have_text("#lobby")
    await expect(page.locator("#unbound-hint")).to_be_hidden()

    composer = page.get_by_label("Message", exact=True)
    await composer.fill("@Rules what is 2+2?")
    await composer.press("Enter")

    mine = page.locator("li.from-human").last
    await expect(mine.locator(".sender")).to_have_text("Ada")
    await expect(mine.locator(".message-body")).to_have_text("@Rules what is 2+2?")
    inbound = await asyncio.wait_for(responder.received.get(), UI_WAIT_MS / 1000)
    assert (inbound.chat_id, inbound.sender.name, inbound.mentions) == ("lobby", "Ada", ("Rules",))

    streaming = page.locator("li.from-bot.kind-delta")
    await expect(streaming.locator(".sender")).to_have_text("Rules")
    await expect(streaming.locator(".typing")).to_have_text("typing…")
    await expect(streaming.locator(".message-body")).to_have_text("Let me think…")
    await expect(page.locator("#request-list li")).to_have_count(1)
    await expect(page.locator("#request-list")).to_contain_text("what is 2+2")
    await expect(page.locator("#request-list")).to_contain_text("ada-1")
    responder.delta_seen.set()

    answer = page.locator("li.from-bot.kind-final").first
    await expect(answer.locator(".message-body strong")).to_have_text("2 + 2 = 4")
    await expect(answer.locator(".message-body")).to_contain_text("<b>surely</b>")
    await expect(page.locator("li.from-bot.kind-delta")).to_have_count(0)
    await expect(page.locator("li.from-bot")).to_have_count(2)
    assert await answer.locator(".message-body b").count() == 0

    card = page.locator(".protocol-card")
    await expect(card.locator(".badge.type")).to_have_text("RESPONSE")
    await expect(card.locator(".route")).to_have_text("@Rules → @Ada")
    await expect(card.locator(".badge.status")).to_have_text("done")
    await expect(card.locator(".card-facts")).to_contain_text("ada-1")
    await expect(card.locator(".card-facts")).to_contain_text("2/5")
    folded = page.locator("li.from-bot details.protocol-text")
    await expect(folded.locator("summary")).to_have_text("Protocol text")
    await expect(folded.locator("pre.protocol")).to_be_hidden()
    await expect(page.locator("#request-list li")).to_have_count(0)
    await expect(page.locator("#no-requests")).to_be_visible()

    colours = await page.locator("li.from-bot .sender").evaluate_all(
        "nodes => nodes.map(n => getComputedStyle(n).color)"
    )
    assert len(set(colours)) == 1 and colours[0] not in ("rgb(0, 0, 0)", "")

    await page.screenshot(path=str(tmp_path / "webchat.png"), full_page=True)
    await page.set_viewport_size({"width": 400, "height": 800})
    await expect(page.get_by_role("button", name="Send")).to_be_in_viewport(ratio=1)
    await page.screenshot(path=str(tmp_path / "webchat-narrow.png"))
    assert (tmp_path / "webchat.png").stat().st_size > 0
    assert problems == []


async def test_person_text_is_never_html(chat, page, problems) -> None:
    server, _, responder = chat
    await join(page, server.url + "/")
    hostile = '<img src=x onerror="document.title=\'owned\'"> **not bold**'
    composer = page.get_by_label("Message", exact=True)
    await composer.fill(hostile)
    await composer.press("Enter")
    body = page.locator("li.from-human .message-body").last
    await expect(body).to_have_text(hostile)
    assert await page.locator("#messages img").count() == 0
    assert await page.title() == "Demo chat"
    assert problems == []
    await responder.received.get()


async def test_history_survives_a_reload_and_unbound_rooms_get_a_hint(chat, page) -> None:
    server, _, responder = chat
    await join(page, server.url + "/", room="elsewhere")
    await expect(page.locator("#unbound-hint")).to_be_visible()
    composer = page.get_by_label("Message", exact=True)
    await composer.fill("remember me")
    await composer.press("Enter")
    await expect(page.locator("li.from-human:not(.pending)")).to_have_count(1)

    await page.reload()
    await expect(page.locator("#chat")).to_be_visible()
    await expect(page.locator("li.from-human .message-body")).to_have_text(["remember me"])
    await responder.received.get()
    assert responder.received.empty()


async def test_a_link_to_a_room_opens_that_room(chat, page) -> None:
    server, _, _ = chat
    await page.goto(server.url + "/?room=random")
    await expect(page.get_by_label("Room", exact=True)).to_have_value("random")
    await page.get_by_label("Your name", exact=True).fill("Ada")
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#room-label")).to_have_text("#random")
    # Joined elsewhere, the address follows, so it can be shared as it is.
    await page.get_by_role("button", name="Change room").click()
    await page.get_by_label("Room", exact=True).fill("ops")
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#room-label")).to_have_text("#ops")
    assert page.url.endswith("/?room=ops")
    # A link wins over the room the page remembers.
    await page.goto(server.url + "/?room=random")
    await expect(page.locator("#room-label")).to_have_text("#random")


async def test_messages_typed_while_offline_are_sent_once_back_online(chat, page) -> None:
    server, adapter, responder = chat
    await join(page, server.url + "/")

    await adapter.stop()
    await expect(page.locator("#status")).to_contain_text("offline")
    composer = page.get_by_label("Message", exact=True)
    await composer.fill("sent while offline")
    await composer.press("Enter")
    await expect(page.locator("#status")).to_contain_text("1 queued")
    await expect(page.locator("li.pending")).to_have_count(1)

    await adapter.start()
    await expect(page.locator("#status")).to_have_text("connected", timeout=30_000)
    await expect(page.locator("li.pending")).to_have_count(0)
    await expect(page.locator("li.from-human .message-body")).to_have_text(["sent while offline"])
    inbound = await asyncio.wait_for(responder.received.get(), UI_WAIT_MS / 1000)
    assert inbound.text == "sent while offline"
    assert responder.received.empty()


async def test_a_bots_name_is_refused_and_bots_wear_the_mark(chat, page, problems) -> None:
    """Issue 31 item 7: the group's bot Rules has not spoken, yet its name is refused; its
    messages carry the bot mark, and a person's never do."""
    server, adapter, _ = chat
    adapter.use_bindings([Binding(channel=adapter.channel, chat="lobby", group="demo")])
    adapter.use_group_bots("demo", ["Rules"])
    await page.goto(server.url + "/")
    await page.get_by_label("Your name", exact=True).fill("Rul\u0435s")  # a Cyrillic е
    await page.get_by_label("Room", exact=True).fill("lobby")
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#join-error")).to_contain_text("Rules is a bot in this room")

    await page.get_by_label("Your name", exact=True).fill("Ada")
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#status")).to_have_text("connected")
    composer = page.get_by_label("Message", exact=True)
    await composer.fill("hello")
    await composer.press("Enter")
    binding = Binding(channel=adapter.channel, chat="lobby", group="demo")
    await adapter.send(Outbound(binding=binding, conversation="c1", sender_label="Rules",
                                text="<p>hi Ada</p>"))

    bot = page.locator("li.from-bot").last
    await expect(bot.locator(".bot-badge")).to_have_text("bot")
    await expect(page.locator("li.from-human .bot-badge")).to_have_count(0)
    await expect(page.locator("li.from-human .sender")).to_have_text("Ada")
    assert problems == []
