"""The Python bot SDK for BCN's `/ws/bot`: write a handler, get a bot.

    bot = Bot("ws://127.0.0.1:8765/ws/bot", name="Echo", token_file="echo.token")

    @bot.on_message
    async def reply(msg: IncomingMessage, run: Run) -> str:
        return msg.text

    await bot.run()

See docs/bots.md.
"""

from bridge.bcn.bot.client import Bot, MessageHandler, ObserveHandler
from bridge.bcn.bot.coordination import (
    complete_session,
    complete_task,
    dispatch_task,
    resolve_route,
    send_task_message,
)
from bridge.bcn.bot.history import HistoryStore
from bridge.bcn.bot.message import ChannelInfo, IncomingMessage
from bridge.bcn.bot.routing import route_to
from bridge.bcn.bot.run import Run, RunFinished, RunState
from bridge.bcn.bot.token_file import load_token, save_token
from bridge.bcn.versions import CURRENT_PROTOCOL_VERSION

__all__ = [
    "CURRENT_PROTOCOL_VERSION",
    "Bot",
    "ChannelInfo",
    "HistoryStore",
    "IncomingMessage",
    "MessageHandler",
    "ObserveHandler",
    "Run",
    "RunFinished",
    "RunState",
    "complete_session",
    "complete_task",
    "dispatch_task",
    "load_token",
    "resolve_route",
    "route_to",
    "save_token",
    "send_task_message",
]
