"""The operator's dashboard in headless Chromium, against a real bridge running the demo.

The bridge is `bridge.demo`'s deployment (embedded hub, webchat room "lobby" bound to the
group "demo") with `web.dashboard` turned on. The demo bots are started only once the
dashboard is open, so the page is seen showing them arrive; a second tab is a person in the
webchat room asking Rules things over the text protocol. Screenshots of every step are kept
under `$BCN_TEST_ARTIFACTS` (else the test's tmp_path). Durations are printed, never asserted.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app import BridgeApp
from bridge.cli.demo import with_dashboard
from bridge.config.schema import BridgeConfig
from bridge.demo import DEMO_ROOM, demo_config, start_demo_bots
from bridge.protocol import build_request, parse
from tests.support.browser import BACKGROUND_TAB_ARGS, BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

UI_WAIT_MS = 30_000
"""Upper bound for the page to show something on a busy machine; never asserted as a duration."""
TOKEN = "dashboard-test-token-0123456789"
BINDING = f"webchat:main|{DEMO_ROOM}|"
"""The demo's one binding, as the dashboard keys it (channel|chat|thread)."""
PAGE_ROWS = 50
MANY = 10_000

pytestmark = BROWSER_MARKS


def dashboard_config(tmp_path: Path) -> BridgeConfig:
    """The demo with the dashboard on, as `bcn-bridge demo --dashboard` runs it."""
    return with_dashboard(demo_config(tmp_path, web_port=0, hub_port=0), TOKEN)


@pytest.fixture
def artifacts(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    root = os.environ.get("BCN_TEST_ARTIFACTS")
    path = Path(root) / request.node.name if root else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
async def bridge(tmp_path: Path) -> AsyncIterator[BridgeApp]:
    app = BridgeApp(dashboard_config(tmp_path))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def demo_bots(
    bridge: BridgeApp, tmp_path: Path
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Starts Echo and Rules when the test says so; stops them before the bridge stops."""
    started: list[Any] = []

    async def start() -> None:
        started.extend(await start_demo_bots(bridge.bcn_url, tmp_path))

    yield start
    for bot in started:
        await bot.stop()


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    """`expect` waits up to UI_WAIT_MS here (its default is 5 s), and 5 s again after."""
    expect.set_options(timeout=UI_WAIT_MS)
    yield
    expect.set_options(timeout=5_000)


@pytest.fixture
def problems() -> list[str]:
    """Uncaught exceptions in the page and CSP violations (which Chromium logs as errors)."""
    return []


@pytest.fixture
async def browser_context(problems: list[str]) -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                   args=CHROMIUM_ARGS + BACKGROUND_TAB_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1440, "height": 1000})
            context.set_default_timeout(UI_WAIT_MS)

            def watch(page: Any) -> None:
                page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
                page.on("console", lambda message: message.type == "error"
                        and "Content Security Policy" in message.text
                        and problems.append(f"csp: {message.text}"))

            context.on("page", watch)
            yield context
        finally:
            await browser.close()


class Shots:
    """Numbered full-page screenshots, checked to exist and not be empty."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.taken: list[Path] = []

    async def take(self, page: Any, name: str) -> Path:
        path = self.directory / f"{len(self.taken) + 1:02d}-{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        return path

    def check(self) -> None:
        assert self.taken
        for path in self.taken:
            assert path.is_file() and path.stat().st_size > 0, path


async def sign_in(page: Any, token: str = TOKEN, name: str = "Ada") -> None:
    await page.get_by_label("Your name", exact=True).fill(name)
    await page.get_by_label("Dashboard token", exact=True).fill(token)
    await page.get_by_role("button", name="Sign in").click()
    if token == TOKEN:
        await expect(page.locator("#operator-name")).to_have_text(f"Signed in as {name}")
        await expect(page.locator("#live")).to_have_text("live")


def row(page: Any, request_id: str) -> Any:
    return page.locator(f'tr.conversation[data-request-id="{request_id}"]')


async def request_id_in_state(page: Any, state: str) -> str:
    """The request id of the (newest) row showing `state`, once there is one."""
    rows = page.locator("tr.conversation", has=page.locator(f".badge.state-{state}"))
    await expect(rows.first).to_be_visible()
    request_id = await rows.first.get_attribute("data-request-id")
    assert request_id
    return request_id


async def counter(page: Any, channel: str, column: str) -> int:
    cell = page.locator(f'#counter-messages tr[data-channel="{channel}"] td.{column}')
    if not await cell.count():
        return 0
    return int((await cell.inner_text()).replace(",", ""))


async def test_an_operator_watches_and_acts(
    bridge: BridgeApp, demo_bots: Callable[[], Awaitable[None]], browser_context: Any,
    problems: list[str], artifacts: Path,
) -> None:
    assert bridge.web is not None
    base = bridge.web.url
    shots = Shots(artifacts)
    dashboard = await browser_context.new_page()

    # Without a session the page answers 401 with the sign-in form; a wrong token says so.
    response = await dashboard.goto(f"{base}/dashboard")
    assert response is not None and response.status == 401
    await expect(dashboard.get_by_role("button", name="Sign in")).to_be_visible()
    await sign_in(dashboard, token="not-the-token-at-all")
    await expect(dashboard.locator("#login-message")).to_have_text("Wrong token.")
    await shots.take(dashboard, "wrong-token")

    await sign_in(dashboard)
    await expect(dashboard.locator("#ready")).to_have_text(re.compile(r"ready|not ready"))
    bcn = dashboard.locator('#health li.part[data-part="bcn"]')
    await expect(bcn.locator(".badge")).to_have_text("up")
    await expect(dashboard.locator('#health li.part[data-part="webchat:main"]')).to_be_visible()
    binding = dashboard.locator(f'#bindings tr.binding[data-binding="{BINDING}"]')
    await expect(binding).to_be_visible()
    await shots.take(dashboard, "signed-in")

    # The demo bots come online while the page is open.
    await demo_bots()
    for name in ("Echo", "Rules"):
        bot = dashboard.locator(f'#bots li.bot[data-bot="{name}"]')
        await expect(bot).to_have_attribute("data-state", re.compile(r"^(idle|replying)$"))
        await expect(bot.locator(".badge.bot-state")).to_have_text(re.compile(r"^(idle|replying)$"))
    await shots.take(dashboard, "bots-online")

    # A person in the webchat room asks Rules something it needs a detail for: CLARIFY.
    messages_in_before = await counter(dashboard, "webchat:main", "in")
    room = await browser_context.new_page()
    await room.goto(f"{base}/?room={DEMO_ROOM}")
    await room.get_by_label("Your name", exact=True).fill("Ada")
    await room.get_by_label("Room", exact=True).fill(DEMO_ROOM)
    await room.get_by_role("button", name="Join").click()
    await expect(room.locator("#status")).to_have_text("connected")
    composer = room.get_by_label("Message", exact=True)
    await composer.fill("/ask Rules weather")
    await composer.press("Enter")
    await expect(room.locator(".question-card.state-open")).to_be_visible()  # the CLARIFY

    await dashboard.bring_to_front()
    waiting = await request_id_in_state(dashboard, "clarifying")
    await expect(row(dashboard, waiting).locator(".chain")).to_have_text("REQUEST → CLARIFY")
    await expect(row(dashboard, waiting).locator(".depth")).to_have_text(re.compile(r"^\d+/\d+$"))
    await expect(row(dashboard, waiting).locator(".route")).to_have_text("Ada → Rules")
    clarifying_count = dashboard.locator('#state-chips [data-state="clarifying"] .count')
    await expect(clarifying_count).to_have_text("1")
    await shots.take(dashboard, "clarifying")

    # …and something it can answer at once: the conversation turns answered.
    await room.bring_to_front()
    await composer.fill("/ask Rules what is 6*7")
    await composer.press("Enter")
    await expect(room.locator(".protocol-card.type-response")).to_contain_text("42")
    await dashboard.bring_to_front()
    answered = await request_id_in_state(dashboard, "answered")
    assert answered != waiting
    await expect(row(dashboard, answered).locator(".chain")).to_have_text("REQUEST → RESPONSE")
    await expect(row(dashboard, answered).locator(".time-left")).to_have_text("—")
    await expect(row(dashboard, waiting).locator(".badge.state-clarifying")).to_be_visible()

    # The counters are /metrics' counters: messages in from the webchat went up.
    await dashboard.wait_for_function(
        """([selector, before]) => {
            const cell = document.querySelector(selector);
            return cell !== null && Number(cell.textContent.replace(/,/g, "")) > before;
        }""",
        arg=['#counter-messages tr[data-channel="webchat:main"] td.in', messages_in_before],
        timeout=UI_WAIT_MS,
    )
    assert await counter(dashboard, "webchat:main", "in") > messages_in_before
    assert await dashboard.locator("#charts svg").count() == 3
    await shots.take(dashboard, "answered")

    # A conversation's detail lists its messages in order.
    await row(dashboard, answered).click()
    detail = dashboard.locator("#detail")
    await expect(detail).to_be_visible()
    await expect(dashboard.locator("#detail-id")).to_have_text(answered)
    history = detail.locator("#detail-history li.history-item")
    await expect(history).to_have_count(2)
    assert [await item.get_attribute("data-type") for item in await history.all()] == [
        "REQUEST", "RESPONSE",
    ]
    await expect(history.nth(0)).to_contain_text("6*7")
    await expect(history.nth(1)).to_contain_text("42")
    await expect(detail.locator(".detail-badges .badge.state-answered")).to_be_visible()
    await expect(dashboard.locator("#cancel-request")).to_be_hidden()

    await row(dashboard, waiting).click()
    await expect(dashboard.locator("#detail-id")).to_have_text(waiting)
    await expect(history).to_have_count(2)
    assert [await item.get_attribute("data-type") for item in await history.all()] == [
        "REQUEST", "CLARIFY",
    ]
    await expect(history.nth(0).locator(".route")).to_have_text("Ada → Rules")
    await expect(history.nth(1).locator(".route")).to_have_text("Rules → Ada")
    # The bot's question, answerable from here: its choices, Stop, own words.
    question = dashboard.locator("#detail-question")
    await expect(question).to_contain_text("Which city?")
    await expect(question.get_by_role("button", name="Tokyo")).to_be_visible()
    await expect(question.get_by_label("Answer in your own words")).to_be_visible()
    await shots.take(dashboard, "detail")

    # Cancel the waiting request, with a reason: it turns failed, in the detail and the list.
    await dashboard.get_by_role("button", name="Cancel request").click()
    await dashboard.get_by_label("Reason (optional)").fill("nobody will answer the question")
    await shots.take(dashboard, "cancel-form")
    await dashboard.get_by_role("button", name="Confirm cancel").click()
    await expect(dashboard.locator("#cancel-result")).to_contain_text("failed")
    await expect(detail.locator(".detail-badges .badge.state-failed")).to_be_visible()
    await expect(row(dashboard, waiting).locator(".badge.state-failed")).to_be_visible()
    await expect(dashboard.locator("#cancel-request")).to_be_hidden()
    await expect(clarifying_count).to_have_text("0")
    await expect(history).to_have_count(3)
    await expect(history.nth(2)).to_have_attribute("data-type", "CLOSE")
    await expect(history.nth(2)).to_contain_text(
        "cancelled by operator Ada: nobody will answer the question"
    )
    await shots.take(dashboard, "cancelled")
    # The question's card, in the room and here, says it closed; its buttons are gone.
    await expect(room.locator(".question-card.state-closed")).to_contain_text("closed")
    await expect(question.get_by_role("button", name="Tokyo")).to_have_count(0)
    # The room is told who cancelled its request.
    await expect(room.locator("li.message", has_text="cancelled by operator Ada")).to_have_count(1)

    # Rules asks again; this time the operator answers from here with one click. The
    # answer reaches the bot, and the room's card says who answered, from where.
    await room.bring_to_front()
    await composer.fill("/ask Rules weather")
    await composer.press("Enter")
    await expect(room.locator(".question-card.state-open")).to_be_visible()
    await dashboard.bring_to_front()
    asked_again = await request_id_in_state(dashboard, "clarifying")
    await row(dashboard, asked_again).click()
    await expect(dashboard.locator("#detail-id")).to_have_text(asked_again)
    await question.get_by_role("button", name="Tokyo").click()
    await expect(question.locator(".question-outcome")).to_contain_text(
        "answered by Ada (dashboard): Tokyo")
    await expect(question.get_by_role("button", name="Tokyo")).to_have_count(0)
    await shots.take(dashboard, "question-answered")
    await room.bring_to_front()
    settled = room.locator(".question-card.state-answered")
    await expect(settled).to_contain_text("answered by Ada (dashboard): Tokyo")
    await expect(settled.locator("button")).to_have_count(0)
    await expect(room.locator(".protocol-card.type-response").last).to_contain_text("Tokyo")
    await dashboard.bring_to_front()

    # Pause the binding and resume it.
    await binding.get_by_role("button", name="Pause").click()
    await expect(binding).to_have_class(re.compile(r"\bpaused\b"))
    await expect(binding.locator(".binding-state")).to_contain_text("paused by Ada")
    await expect(dashboard.locator("#bindings-result")).to_contain_text("Paused")
    await shots.take(dashboard, "paused")
    await expect(room.locator("li.message", has_text="An operator (Ada) paused")).to_have_count(1)
    await binding.get_by_role("button", name="Resume").click()
    await expect(binding).to_have_class(re.compile(r"\bactive\b"))
    await expect(binding.locator(".binding-state")).to_have_text("active")
    await shots.take(dashboard, "resumed")
    await expect(room.locator("li.message", has_text="An operator (Ada) resumed")).to_have_count(1)

    # Signing out ends the session: the page is the sign-in form again.
    await dashboard.get_by_role("button", name="Sign out").click()
    await expect(dashboard.get_by_role("button", name="Sign in")).to_be_visible()
    response = await dashboard.reload()
    assert response is not None and response.status == 401
    await sign_in(dashboard)

    # A session the API no longer accepts: the page says so and links to the sign-in.
    await browser_context.clear_cookies()
    await dashboard.locator('#state-chips [data-state="open"]').click()
    await expect(dashboard.locator("#signed-out")).to_be_visible()
    await expect(dashboard.get_by_role("link", name="Sign in")).to_have_attribute(
        "href", "/dashboard"
    )
    await shots.take(dashboard, "signed-out")

    shots.check()
    assert problems == []


async def test_ten_thousand_open_conversations(
    bridge: BridgeApp, browser_context: Any, problems: list[str], artifacts: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bridge.web is not None and bridge.relay is not None
    base = bridge.web.url
    shots = Shots(artifacts)
    tracker = bridge.relay.tracker
    started = time.perf_counter()
    for n in range(MANY):
        message = parse(build_request(
            to="Rules", from_="Ada", request_id=f"ada-{n:05d}", task=f"task number {n}",
            depth=(1, 5),
        ))
        assert message is not None
        await tracker.track(message, chat=BINDING)
    tracked_s = time.perf_counter() - started

    page = await browser_context.new_page()
    await page.goto(f"{base}/dashboard")
    started = time.perf_counter()
    await sign_in(page)
    rows = page.locator("#conversation-rows tr.conversation")
    await expect(rows).to_have_count(PAGE_ROWS)
    first_render_s = time.perf_counter() - started
    await expect(page.locator('#state-chips [data-state="open"] .count')).to_have_text("10,000")
    await expect(page.locator('#state-chips [data-state=""] .count')).to_have_text("10,000")
    await expect(rows.first).to_have_attribute("data-request-id", f"ada-{MANY - 1:05d}")
    first_rows_ms = await page.evaluate(
        "performance.getEntriesByName('dashboard:first-rows')[0].startTime"
    )
    await shots.take(page, "ten-thousand")

    # Older, several pages back, then Newer to the first page again; one page in the DOM.
    seen: set[str] = set()
    page_s: list[float] = []
    pages = 4
    for number in range(1, pages + 1):
        ids = [await r.get_attribute("data-request-id") for r in await rows.all()]
        assert len(ids) == PAGE_ROWS and not seen.intersection(ids)
        seen.update(i for i in ids if i)
        if number == pages:
            break
        started = time.perf_counter()
        await page.get_by_role("button", name="Older").click()
        await expect(page.locator("#page-info")).to_contain_text(f"page {number + 1} ")
        await expect(rows.first).to_have_attribute(
            "data-request-id", f"ada-{MANY - 1 - number * PAGE_ROWS:05d}"
        )
        page_s.append(time.perf_counter() - started)
        assert await page.locator("#conversation-rows tr").count() <= PAGE_ROWS
    for number in range(pages - 1, 0, -1):
        await page.get_by_role("button", name="Newer").click()
        await expect(page.locator("#page-info")).to_contain_text(f"page {number} ")
    await expect(rows.first).to_have_attribute("data-request-id", f"ada-{MANY - 1:05d}")
    assert await page.locator("#conversation-rows tr").count() <= PAGE_ROWS
    await expect(page.get_by_role("button", name="Newer")).to_be_disabled()
    page_ms = await page.evaluate(
        "performance.getEntriesByName('dashboard:page').map((m) => m.duration)"
    )
    await shots.take(page, "ten-thousand-paged")

    # The filters are the server's too: by chat, by bot (any case), and one that matches none.
    open_count = page.locator('#state-chips [data-state="open"] .count')
    await page.get_by_label("Chat", exact=True).select_option(BINDING)
    await expect(page.locator("#page-info")).to_contain_text("page 1 ")
    await expect(rows).to_have_count(PAGE_ROWS)
    await expect(open_count).to_have_text("10,000")
    await page.get_by_label("Bot", exact=True).fill("rules")
    await expect(rows).to_have_count(PAGE_ROWS)
    await page.get_by_label("Bot", exact=True).fill("Nobody")
    await expect(page.locator("#conversation-rows")).to_contain_text("No conversations match.")
    await expect(open_count).to_have_text("0")
    await expect(rows).to_have_count(0)
    await page.get_by_label("Bot", exact=True).fill("")
    await expect(rows).to_have_count(PAGE_ROWS)
    await expect(open_count).to_have_text("10,000")

    # The bridge goes away: the page says it is reconnecting (EventSource retries by itself).
    await bridge.stop()
    await expect(page.locator("#live")).to_have_text("reconnecting…")
    await shots.take(page, "reconnecting")

    with capsys.disabled():
        print(
            f"\n[dashboard, {MANY:,} open conversations] tracked in {tracked_s:.1f} s; "
            f"sign-in to first {PAGE_ROWS} rows: {first_render_s * 1000:.0f} ms wall clock, "
            f"first rows {first_rows_ms:.0f} ms after navigation (performance.now); "
            f"Older/Newer page: median {statistics.median(page_s) * 1000:.0f} ms wall clock "
            f"(Older ×{len(page_s)}), in-page fetch+render median "
            f"{statistics.median(page_ms):.0f} ms (×{len(page_ms)})"
        )
    shots.check()
    assert problems == []
