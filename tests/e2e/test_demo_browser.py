"""The demo in headless Chromium: a person joins, talks to the bots, sees a protocol card."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.app import BridgeApp
from bridge.demo import DEMO_ROOM, demo_config, start_demo_bots

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
UI_WAIT_MS = 15_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"needs Debian's chromium at {CHROMIUM}"
    ),
]


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
