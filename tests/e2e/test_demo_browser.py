"""The demo in headless Chromium: a person joins, talks to the bots, sees a protocol card."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bridge.app import BridgeApp
from bridge.demo import DEMO_ROOM, demo_config, start_demo_bots
from tests.support.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

UI_WAIT_MS = 15_000

pytestmark = BROWSER_MARKS


@pytest.fixture
async def demo(tmp_path: Path):
    app = BridgeApp(demo_config(tmp_path, web_port=0, hub_port=0))
    await app.start()
    bots = await start_demo_bots(app.bcn_url, tmp_path)
    try:
        yield app
    finally:
        for bot in bots:
            await bot.stop()
        await app.stop()


async def joined_page(browser, demo, name: str):  # type: ignore[no-untyped-def]
    """A new tab in the demo's room, joined as `name` and connected."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    page.set_default_timeout(UI_WAIT_MS)
    await page.goto(f"{demo.web.url}/?room={DEMO_ROOM}")
    await page.get_by_label("Your name", exact=True).fill(name)
    await page.get_by_label("Room", exact=True).fill(DEMO_ROOM)
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator("#status")).to_have_text("connected")
    return page


async def test_demo_page_conversation(demo, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            page.set_default_timeout(UI_WAIT_MS)
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(str(error)))
            await page.goto(f"{demo.web.url}/?room={DEMO_ROOM}")
            await page.get_by_label("Your name", exact=True).fill("Ada")
            await page.get_by_label("Room", exact=True).fill(DEMO_ROOM)
            await page.get_by_role("button", name="Join").click()
            await expect(page.locator("#status")).to_have_text("connected")
            await expect(page.locator("#unbound-hint")).to_be_hidden()

            composer = page.get_by_label("Message", exact=True)
            await composer.fill("hello from the browser")
            await composer.press("Enter")
            echo = page.locator("li.from-bot.kind-final", has_text="hello from the browser")
            await expect(echo.locator(".sender")).to_have_text("Echo")

            await composer.fill("/ask Rules what is 6*7")
            await composer.press("Enter")
            card = page.locator(".protocol-card.type-response")
            await expect(card.locator(".badge.status")).to_have_text("done")
            await expect(card).to_contain_text("42")
            await expect(page.locator(".protocol-card.type-request")).to_contain_text("Rules")

            await page.screenshot(path=str(tmp_path / "demo.png"), full_page=True)
            assert (tmp_path / "demo.png").stat().st_size > 0
            assert problems == []
        finally:
            await browser.close()


async def test_demo_page_shows_who_asked_depths_and_no_false_edits(demo) -> None:
    """A person's /ask card is theirs (no bot badge), the open request's depth reads as
    digits in the panel, and a reply that streamed in is not marked "(edited)"."""
    from playwright.async_api import async_playwright, expect

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await joined_page(browser, demo, "Ada")
            composer = page.get_by_label("Message", exact=True)

            await composer.fill("tell me a streamed story")
            await composer.press("Enter")
            streamed = page.locator("li.from-bot.kind-final", has_text="streamed story")
            await expect(streamed.locator(".sender")).to_have_text("Echo")
            await expect(streamed).not_to_contain_text("(edited)")

            await composer.fill("/ask Rules weather")
            await composer.press("Enter")
            asked = page.locator("li.message", has=page.locator(".protocol-card.type-request"))
            await expect(asked.locator(".sender")).to_have_text("Ada")
            await expect(asked).to_have_class(re.compile(r"\bfrom-human\b"))
            await expect(asked.locator(".bot-badge")).to_have_count(0)
            await expect(page.locator(".question-card.state-open")).to_be_visible()  # a CLARIFY
            panel = page.locator("#request-list li")
            await expect(panel).to_have_count(1)
            await expect(panel).to_contain_text(re.compile(r"depth [12]/5"))  # CLARIFY: 2/5
            await expect(panel).not_to_contain_text("?/?")
        finally:
            await browser.close()


async def test_a_bots_question_is_answered_with_one_click(demo, tmp_path: Path) -> None:
    """The Rules bot asks which city, as a card with a button per city; one click answers
    it for every page in the room, and the card says who answered."""
    from playwright.async_api import async_playwright, expect

    root = os.environ.get("BCN_TEST_ARTIFACTS")
    shots = Path(root) / "webchat-cards" if root else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = []
            for name in ("Ada", "Bob"):
                pages.append(await joined_page(browser, demo, name))
            ada, bob = pages
            composer = ada.get_by_label("Message", exact=True)
            await composer.fill("/ask Rules weather")
            await composer.press("Enter")
            card = bob.locator(".question-card.state-open")
            await expect(card).to_contain_text("Which city?")
            await expect(card).to_contain_text("Rules asks")
            await expect(card.locator(".question-left")).to_contain_text("left")
            await bob.screenshot(path=str(shots / "card-open.png"), full_page=True)

            await card.get_by_role("button", name="Tokyo").click()
            for page in pages:
                answered = page.locator(".question-card.state-answered")
                await expect(answered).to_contain_text("answered by Bob (webchat): Tokyo")
                await expect(answered.locator("button")).to_have_count(0)
            response = ada.locator(".protocol-card.type-response")
            await expect(response).to_contain_text("Tokyo")
            await ada.screenshot(path=str(shots / "card-answered.png"), full_page=True)
            assert (shots / "card-answered.png").stat().st_size > 0
        finally:
            await browser.close()


async def test_reply_to_a_bots_question_answers_it(demo, tmp_path: Path) -> None:
    """The Reply action on a message: replying to Rules' question answers it, whatever the
    reply says, and the reply shows what it answers."""
    from playwright.async_api import async_playwright, expect

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await joined_page(browser, demo, "Ada")
            composer = page.get_by_label("Message", exact=True)
            await composer.fill("/ask Rules weather")
            await composer.press("Enter")
            question = page.locator("li.message.from-bot", has_text="Which city?").first
            await question.get_by_role("button", name="Reply").click()
            await expect(page.locator("#reply-bar")).to_contain_text("Replying to Rules")
            await composer.fill("@Bob Sydney")  # sent plainly, this would be talk to Bob
            await composer.press("Enter")
            await expect(page.locator("#reply-bar")).to_be_hidden()
            mine = page.locator("li.message.from-human", has_text="@Bob Sydney")
            await expect(mine.locator(".reply-quote")).to_contain_text("Rules")
            response = page.locator(".protocol-card.type-response")
            await expect(response).to_contain_text("Sydney")
        finally:
            await browser.close()
