"""Humans in the loop: `/ask`, `/requests`, `/stop`, `/new` and help, in any chat.

A command is a message whose first word is `/name` (adapters already turn Telegram's
`/ask@ThisBot` into `/ask`). Command words are configurable; an unknown `/word` gets a
short help text. Answers are bridge notices in the same chat.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from datetime import datetime

from bridge.bcn import BcnError, ConnectionClosed
from bridge.core.binding import Binding
from bridge.core.cards import requester_key
from bridge.core.context import RelayContext
from bridge.core.model import Inbound, OutboundKind
from bridge.core.outbox import Lane
from bridge.core.posting import Posting
from bridge.core.relay_state import GroupBots
from bridge.protocol import build_request, generate_request_id, parse
from bridge.store.records import Conversation
from bridge.tracking.scope import protocol_id

log = logging.getLogger(__name__)

_COMMAND = re.compile(r"\s*/([A-Za-z][A-Za-z0-9_]*)(?:@\S+)?(?:\s+(.*))?\s*\Z", re.DOTALL)

RouteProtocol = Callable[[Inbound, Binding, Lane, str], Awaitable[None]]
"""Forward a protocol text (from a human) to its addressed bot, as the inbound step does."""


def split_command(text: str) -> tuple[str, str] | None:
    """(`name`, `rest`) when the text is a command, else None (`/etc/hosts` is not)."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


class Commands:
    def __init__(self, ctx: RelayContext, posting: Posting, route_protocol: RouteProtocol) -> None:
        self.ctx = ctx
        self.posting = posting
        self.route_protocol = route_protocol

    async def handle(self, msg: Inbound, binding: Binding, lane: Lane) -> bool:
        """Run the message as a command; False when it is not one."""
        parsed = split_command(msg.text)
        if parsed is None:
            return False
        name, rest = parsed
        names = self.ctx.commands
        try:
            if name == names.ask:
                await self._ask(msg, binding, lane, rest)
            elif name == names.requests:
                await self._requests(msg, binding, lane)
            elif name == names.stop:
                await self._stop(msg, binding, lane)
            elif name == names.new:
                await self._new(msg, binding, lane)
            else:
                bots = await self.ctx.bots(binding)
                await self._answer(msg, lane, binding, self.help_text(bots, unknown=name))
        except (BcnError, ConnectionClosed, TimeoutError) as exc:
            log.warning("command /%s failed: %s", name, exc)
            await self._answer(msg, lane, binding, f"⚠️ `/{name}` failed: the BCN said {exc}")
        return True

    async def _answer(self, msg: Inbound, lane: Lane, binding: Binding, text: str) -> None:
        """The bridge's answer to a command, as a reply to it."""
        await self.posting.notice(lane, binding, text, reply_to=msg.message_id)

    def help_text(self, group_bots: GroupBots, unknown: str | None = None) -> str:
        names = self.ctx.commands
        bots = group_bots.listing()
        lead = f"Unknown command `/{unknown}`." if unknown and unknown != "help" else "Commands:"
        lines = [lead]
        for name, usage in (
            (names.ask, " <Bot> <task>` — ask a bot for something, tracked as a request"),
            (names.requests, "` — open requests in this chat"),
            (names.stop, "` — stop the bot reply that is running"),
            (names.new, "` — start a fresh conversation with the bots"),
        ):
            if name:
                lines.append(f"- `/{name}{usage}")
        lines.append(f"Bots here: {bots}. Reply to a bot's question to answer it.")
        return "\n".join(lines)

    async def _ask(self, msg: Inbound, binding: Binding, lane: Lane, rest: str) -> None:
        target, _, task = rest.partition(" ")
        task = task.strip()
        group_bots = await self.ctx.bots(binding)
        bot = group_bots.named(target) if target else None
        if bot is None or not task:
            bots = group_bots.listing()
            problem = "Usage" if not target or not task else f"No bot called {target!r} here"
            await self._answer(
                msg, lane, binding,
                f"{problem}: `/{self.ctx.commands.ask} <Bot> <task>`. Bots here: {bots}.",
            )
            return
        request_id = generate_request_id(msg.sender.name or "human")
        block = build_request(to=bot, from_=msg.sender.name, task=task, request_id=request_id)
        # Who asked, by platform id: a card's `answers: requester` is checked against it,
        # never against a display name anyone can copy.
        await self.ctx.store.message_map.put(
            requester_key(lane.key, request_id),
            {"id": msg.sender.id, "name": msg.sender.name}, self.ctx.clock(),
        )
        parsed = parse(block)
        await self.posting.post(
            lane, binding, block, sender_label=msg.sender.name, kind=OutboundKind.FINAL,
            protocol=parsed.to_dict() if parsed else None, from_human=True,
        )
        await self.route_protocol(msg, binding, lane, block)

    async def _requests(self, msg: Inbound, binding: Binding, lane: Lane) -> None:
        open_ = await self.ctx.tracker.list(status=("open", "clarifying"), chat=lane.key)
        if not open_:
            await self._answer(msg, lane, binding, "No open requests in this chat.")
            return
        now = self.ctx.clock()
        lines = [f"Open requests ({len(open_)}):"]
        lines += [describe(conv, now) for conv in open_]
        await self._answer(msg, lane, binding, "\n".join(lines))

    async def _stop(self, msg: Inbound, binding: Binding, lane: Lane) -> None:
        session = await self.ctx.state.session(lane.key)
        if session is None:
            await self._answer(msg, lane, binding, "Nothing is running here.")
            return
        payload = await self.ctx.link.request("channel.abort", {"bcs_session_id": session})
        stopped = payload.get("aborted_run_ids") or []
        text = f"Stopped {len(stopped)} running repl{'y' if len(stopped) == 1 else 'ies'}." \
            if stopped else "Nothing is running here."
        await self._answer(msg, lane, binding, text)

    async def _new(self, msg: Inbound, binding: Binding, lane: Lane) -> None:
        binding_id = self.ctx.link.binding_id(binding)
        if binding_id is None:
            await self._answer(msg, lane, binding, "The BCN link is not up yet; try again soon.")
            return
        params: dict[str, object] = {"binding_id": binding_id}
        if msg.thread_id:
            params["thread_id"] = msg.thread_id
        if binding.session_scope == "sender":
            params["sender_user_id"] = msg.sender.id
        await self.ctx.link.request("channel.session.reset", params)
        await self.ctx.state.clear_session(lane.key)
        await self._answer(
            msg, lane, binding,
            "Started a fresh conversation: the bots will not see earlier messages.",
        )


def describe(conv: Conversation, now: datetime) -> str:
    depth = f"{conv.depth[0]}/{conv.depth[1]}" if conv.depth else "-"
    due = ""
    if conv.deadline is not None:
        minutes = max(0, int((conv.deadline - now).total_seconds() // 60))
        due = f", times out in {minutes} min"
    task = (conv.task or "").replace("\n", " ")
    if len(task) > 80:
        task = task[:77] + "…"
    return (
        f"- `{protocol_id(conv)}` {conv.from_} → {conv.to}: {task} "
        f"({conv.status}, depth {depth}{due})"
    )
