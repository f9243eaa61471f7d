"""The rules bot over a socket, and `example-bot` run as a real process."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import pytest
from bot_fake_bcn import send_params

from bridge.bcn.examples.rules_bot import build_rules_bot
from bridge.cli import example_bot
from bridge.protocol import MessageType, build_request, parse
from bridge.retry import Backoff

REPO = Path(__file__).resolve().parents[2]


def final_text(event: dict) -> str:
    return event["message"]["content"][0]["text"]


async def test_rules_bot_answers_a_request_and_a_clarification(fake_bcn, tmp_path):
    bot = build_rules_bot(fake_bcn.url, name="Rules", token_file=tmp_path / "rules.token",
                          backoff=Backoff(initial=0.01))
    request = build_request(to="Rules", from_="Lotbot", task="weather", request_id="lotbot-w1")
    async with bot:
        first = (await fake_bcn.request("chat.send", send_params(request)))["run_id"]
        clarify = parse(final_text(await fake_bcn.wait_terminal(first)))
        second = (await fake_bcn.request("chat.send", send_params("Paris")))["run_id"]
        response = parse(final_text(await fake_bcn.wait_terminal(second)))
    assert clarify.type is MessageType.CLARIFY and clarify.request_id == "lotbot-w1"
    assert response.type is MessageType.RESPONSE and response.request_id == "lotbot-w1"
    assert response.result == "Weather in Paris: 18°C, partly cloudy"


def parse_cli(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    example_bot.register(parser.add_subparsers())
    return parser.parse_args(["example-bot", *argv])


def test_cli_refuses_bad_options(capsys):
    args = parse_cli("echo", "--url", "http://127.0.0.1/ws/bot")
    assert args.handler(args) == example_bot.EXIT_USAGE
    assert "ws://" in capsys.readouterr().err
    args = parse_cli("rules", "--url", "ws://127.0.0.1:1/ws/bot", "--heartbeat", "0")
    assert args.handler(args) == example_bot.EXIT_USAGE
    with pytest.raises(SystemExit):
        parse_cli("parrot", "--url", "ws://127.0.0.1:1/ws/bot")


async def test_cli_runs_the_echo_bot_until_terminated(fake_bcn, tmp_path):
    script = ("import sys; from bridge.cli.example_bot import register; import argparse; "
              "p = argparse.ArgumentParser(); register(p.add_subparsers()); "
              "a = p.parse_args(sys.argv[1:]); sys.exit(a.handler(a))")
    token_file = tmp_path / "echo.token"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, "example-bot", "echo", "--url", fake_bcn.url,
        "--name", "CliEcho", "--token-file", str(token_file), "--no-stream",
        cwd=REPO, stderr=asyncio.subprocess.PIPE,
    )
    try:
        await fake_bcn.wait_until(lambda: fake_bcn.connection is not None, timeout=20)
        run_id = (await fake_bcn.request("chat.send", send_params("ping pong")))["run_id"]
        final = await fake_bcn.wait_terminal(run_id)
    finally:
        process.terminate()
        _, stderr = await process.communicate()
    assert process.returncode == 0  # SIGTERM is an orderly stop
    assert [e["state"] for e in fake_bcn.events(run_id)] == ["final"]
    assert final_text(final) == "ping pong"
    assert fake_bcn.connect_params[0]["name"] == "CliEcho"
    assert token_file.read_text().strip() in fake_bcn.known_tokens
    assert token_file.read_text().strip() not in stderr.decode()
