"""`Bot`: a `/ws/bot` client that lets a bot author write only the handler.

The SDK does everything BCN asks of an engine: the `bot.connect` handshake with a
persisted token, `env`, the deprecation notice, `bot.status` heartbeats, reconnecting with
backoff, ACKing `chat.send` at once and running each answer in its own task, `chat.abort` of
exactly one run, `chat.history` from its own store, and `chat.inject` observation.

It speaks protocol v3 as the BCN server does (the default): the run events are then
`chat` / `agent` with the run's `sessionId` and per-run `seq`, a delivery's
`idempotency_key` is the run id (a repeated delivery is ACKed with the same run and not
answered twice), and a v3 message without `bcs_session_id` is refused. v1/v2 (and a BCN
that answers v3 without the `unified_run_events` capability) keep `chat.event`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiohttp

from bridge.bcn.bot.dialect import Dialect, LegacyDialect, UnifiedDialect
from bridge.bcn.bot.history import HistoryStore
from bridge.bcn.bot.message import IncomingMessage, now_ms
from bridge.bcn.bot.run import Run, RunFinished
from bridge.bcn.bot.token_file import load_token, save_token
from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.frames import Event, Request
from bridge.bcn.limits import MAX_FRAME_BYTES, FrameTooLarge
from bridge.bcn.versions import CURRENT_PROTOCOL_VERSION, speaks_run_events
from bridge.retry import Backoff

log = logging.getLogger(__name__)

MessageHandler = Callable[[IncomingMessage, Run], Awaitable[str | None]]
"""Answers one `chat.send`: stream through the `Run`, or return the final text."""

ObserveHandler = Callable[[IncomingMessage], Awaitable[None]]
"""Sees one `chat.inject` (a message the bot should know about but not answer)."""

_FATAL_CODES = frozenset({
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
    ErrorCode.INVALID_REQUEST,  # e.g. the name is taken: asking again cannot change that
    ErrorCode.BOT_ID_CONFLICT,
})
"""`bot.connect` refusals that are final: the bot stops with the reason instead of retrying."""
_ERROR_TEXT_LIMIT = 200


@dataclass(slots=True)
class _ActiveRun:
    run: Run
    task: asyncio.Task[None]
    connection: Connection


class Bot:
    """A BCN bot. Register handlers, then `await bot.run()` (or `async with bot:`).

    `token_file` keeps the BCN token between runs (mode 0600); `history` answers
    `chat.history` (pass `HistoryStore(path=...)` to keep it on disk). Intervals are
    parameters so tests can shrink them.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        protocol_version: int = CURRENT_PROTOCOL_VERSION,
        heartbeat_interval: float = 60.0,
        backoff: Backoff | None = None,
        history: HistoryStore | None = None,
        apply_env: bool = True,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        abort_grace: float = 5.0,
        on_message: MessageHandler | None = None,
        on_observe: ObserveHandler | None = None,
        client_kind: str | None = None,
        max_observing: int = 100,
    ) -> None:
        if not url.startswith(("ws://", "wss://")):
            raise ValueError(f"BCN url must start with ws:// or wss://, got {url!r}")
        if isinstance(protocol_version, bool) or not isinstance(protocol_version, int) or (
            protocol_version < 1
        ):
            raise ValueError(
                f"protocol_version must be a positive integer, got {protocol_version!r}"
            )
        if heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        if max_observing < 1:
            raise ValueError("max_observing must be at least 1")
        self.url = url
        self.name = name
        self.token_file = token_file
        self.protocol_version = protocol_version
        self.heartbeat_interval = heartbeat_interval
        self.backoff = backoff or Backoff(initial=1.0, maximum=30.0)
        self.history = history or HistoryStore()
        self.apply_env = apply_env
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.abort_grace = abort_grace
        self._message_handler = on_message
        self._observe_handler = on_observe
        self.client_kind = client_kind
        self._token = token or (load_token(token_file) if token_file is not None else None)

        self.bot_uuid: str | None = None
        self.negotiated_version: int | None = None
        self.capabilities: dict[str, Any] = {}
        """What `bot.connect` negotiated (`unified_run_events`, `canonical_session_id`, …)."""
        self.run_events = False
        """True when this connection speaks v3 run events."""
        self.connect_count = 0
        """How many handshakes succeeded; a reconnect makes it grow."""
        self.injects_shed = 0
        """Observed messages (`chat.inject`) BCN reported dropping while this bot was behind."""
        self.backpressure: dict[str, Any] | None = None
        """BCN's latest `bot.backpressure` notice (`state`: `shedding` or `caught_up`)."""

        self._connected = asyncio.Event()
        self._connection: Connection | None = None
        self._http: aiohttp.ClientSession | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False
        self._fatal: BcnError | None = None
        self._deprecation_logged = False
        self._register_at_once = False
        self._runs: dict[str, _ActiveRun] = {}
        self._finished_runs: OrderedDict[str, str] = OrderedDict()  # run_id -> session_key
        self._finished_runs_kept = 1000
        self._background: set[asyncio.Task[None]] = set()
        self._observing = asyncio.Semaphore(max_observing)
        """Observe handlers running at once; at the bound the next inject's answer waits."""

    def __repr__(self) -> str:  # the token stays out of reprs, and so out of logs
        return f"Bot(url={self.url!r}, name={self.name!r}, bot_uuid={self.bot_uuid!r})"

    # ------------------------------------------------------------------ registration
    def on_message(self, handler: MessageHandler) -> MessageHandler:
        """Decorator: the function that answers `chat.send`."""
        self._message_handler = handler
        return handler

    def on_observe(self, handler: ObserveHandler) -> ObserveHandler:
        """Decorator: the function that sees `chat.inject` messages."""
        self._observe_handler = handler
        return handler

    # ------------------------------------------------------------------ lifecycle
    @property
    def token(self) -> str | None:
        return self._token

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self, timeout: float | None = None) -> None:
        """Start in the background and return once the first handshake succeeded.

        Raises `BcnError` when BCN refuses this bot for good (e.g. an unsupported protocol
        version) and `TimeoutError` when `timeout` passes first; the bot is stopped then.
        """
        self._launch()
        try:
            await self.wait_connected(timeout)
        except BaseException:
            await self.stop()
            raise

    async def run(self) -> None:
        """Run until `stop()`; returns at once with `BcnError` if BCN refuses this bot."""
        self._launch()
        supervisor = self._supervisor
        assert supervisor is not None
        try:
            await asyncio.wait({supervisor})
        finally:
            if not self._stopping:
                await self.stop()
        if self._fatal is not None:
            raise self._fatal

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a connection is up (again); raises if the bot gave up."""
        supervisor = self._supervisor
        if supervisor is None:
            raise RuntimeError("the bot is not running; call start() or run() first")
        waiter = asyncio.create_task(self._connected.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, supervisor}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
        if waiter in done:
            return
        if supervisor in done:
            raise self._fatal or RuntimeError("the bot stopped before it connected")
        raise TimeoutError(f"not connected to {self.url} within {timeout} s")

    async def stop(self) -> None:
        """Disconnect, cancel running answers and background work; safe to call twice."""
        self._stopping = True
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.cancel()
            await asyncio.wait({supervisor})
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.wait(self._background)
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Ask BCN something on the live connection (`route.resolve`, `task.*`, …).

        Raises `BcnError` when BCN refuses, `ConnectionClosed` when the bot is not
        connected, `TimeoutError` after `timeout` (default `request_timeout`).
        """
        connection = self._connection
        if connection is None:
            raise ConnectionClosed("not connected to BCN")
        return await connection.request(method, params or {},
                                        timeout=timeout or self.request_timeout)

    async def __aenter__(self) -> Bot:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _launch(self) -> None:
        if self._supervisor is not None:
            return
        if self._message_handler is None and self._observe_handler is None:
            raise ValueError("register a handler first (@bot.on_message or @bot.on_observe)")
        self._stopping = False
        self._fatal = None
        self._http = aiohttp.ClientSession()
        self._supervisor = asyncio.create_task(self._supervise(), name=f"bot-{self.name}")

    # ------------------------------------------------------------------ connection loop
    async def _supervise(self) -> None:
        """Connect, serve until the socket drops, wait with backoff, repeat."""
        while not self._stopping:
            try:
                reason = await self._serve_one_connection()
            except BcnError as exc:
                if exc.code in _FATAL_CODES:
                    log.error("BCN refused this bot: %s", exc)
                    self._fatal = exc
                    return
                reason = f"BCN refused the connection: {exc}"
            except (aiohttp.ClientError, OSError, TimeoutError, ConnectionClosed) as exc:
                reason = f"connection failed: {exc or type(exc).__name__}"
            if self._stopping:
                return
            if self._register_at_once:  # not a transient failure: nothing to wait out
                self._register_at_once = False
                continue
            delay = self.backoff.next_delay()
            log.warning("BCN %s: %s; reconnecting in %.1f s", self.url, reason, delay)
            await asyncio.sleep(delay)

    async def _serve_one_connection(self) -> str:
        """Serve one connection until it drops; returns why it ended, for the log."""
        assert self._http is not None
        async with asyncio.timeout(self.connect_timeout):
            ws = await self._http.ws_connect(self.url, autoping=True,
                                             max_msg_size=MAX_FRAME_BYTES)
        connection = Connection(ws, name="bot", request_timeout=self.request_timeout)
        connection.on_request = partial(self._on_request, connection)
        connection.on_event = self._on_event
        reader = asyncio.create_task(connection.run(), name="bot-reader")
        heartbeat: asyncio.Task[None] | None = None
        try:
            await self._handshake(connection)
            self._connection = connection
            self._connected.set()
            self.backoff.reset()
            heartbeat = asyncio.create_task(self._heartbeat(connection), name="bot-heartbeat")
            await asyncio.wait({reader})
        finally:
            self._connected.clear()
            self._connection = None
            if heartbeat is not None:
                heartbeat.cancel()
            await self._cancel_runs_of(connection)
            await connection.close()
            reader.cancel()
            await asyncio.wait({reader})
        if connection.close_code is None:
            return "connection closed"
        return (f"BCN closed the connection ({connection.close_code}: "
                f"{connection.close_reason or 'no reason given'})")

    async def _handshake(self, connection: Connection) -> None:
        params: dict[str, Any] = {"protocol_version": self.protocol_version}
        if self._token:
            params["token"] = self._token
        if self.name:
            params["name"] = self.name
        if self.client_kind:
            params["client_kind"] = self.client_kind
        try:
            payload = await connection.request("bot.connect", params, timeout=self.connect_timeout)
        except BcnError as exc:
            if exc.code == ErrorCode.ALREADY_CONNECTED:
                # Another connection of this bot is live (or its ghost not yet cleaned up):
                # keep the token and retry after the backoff, as the BCN server asks.
                log.warning("BCN says this bot is already connected elsewhere; will retry")
            if exc.code == ErrorCode.UNAUTHORIZED and self._token:
                # The BCN no longer knows this token (e.g. it was reset): register anew rather
                # than retrying a dead credential forever.
                log.warning("BCN rejected the saved token; registering as a new bot")
                self._token = None
                self._register_at_once = True
            raise
        token = payload.get("token")
        if not isinstance(token, str) or not token:
            raise BcnError(ErrorCode.INVALID_REQUEST, "bot.connect answer has no token")
        if token != self._token:
            self._token = token
            if self.token_file is not None:
                save_token(self.token_file, token)
        bot_uuid = payload.get("bot_uuid")
        self.bot_uuid = bot_uuid if isinstance(bot_uuid, str) else None
        version = payload.get("protocol_version")
        self.negotiated_version = version if isinstance(version, int) else self.protocol_version
        negotiated = payload.get("capabilities")
        self.capabilities = dict(negotiated) if isinstance(negotiated, dict) else {}
        self.run_events = speaks_run_events(self.negotiated_version, negotiated)
        self.connect_count += 1
        self._apply_env(payload.get("env"))
        self._log_deprecation(payload.get("deprecation"))
        log.info(
            "connected to %s as %s (bot_uuid=%s, new=%s, protocol v%s)",
            self.url, self.name or "unnamed bot", self.bot_uuid,
            payload.get("is_new") is True, self.negotiated_version,
        )

    def _apply_env(self, env: Any) -> None:
        """Export the BCN's env for tools the bot runs; values are never logged."""
        if not self.apply_env or not isinstance(env, dict):
            return
        applied = []
        for key, value in env.items():
            if isinstance(key, str) and key and isinstance(value, str):
                os.environ[key] = value
                applied.append(key)
        if applied:
            log.debug("applied BCN env: %s", ", ".join(sorted(applied)))

    def _log_deprecation(self, notice: Any) -> None:
        if self._deprecation_logged or not isinstance(notice, dict):
            return
        self._deprecation_logged = True
        log.warning(
            "BCN protocol v%s is deprecated (sunset %s): %s",
            self.negotiated_version,
            notice.get("sunset_date") or "unknown",
            notice.get("message") or "please upgrade",
        )

    async def _heartbeat(self, connection: Connection) -> None:
        """`bot.status` every interval; an unanswered one means the link is dead."""
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            busy = any(active.connection is connection for active in self._runs.values())
            status = {"status": "busy" if busy else "idle", "load": 1.0 if busy else 0.0}
            try:
                await connection.request("bot.status", status)
            except TimeoutError:
                log.warning("BCN did not answer bot.status; reconnecting")
                await connection.close()
                return
            except ConnectionClosed:
                return
            except BcnError as exc:
                log.warning("BCN refused bot.status: %s", exc)

    # ------------------------------------------------------------------ requests from BCN
    async def _on_request(self, connection: Connection, request: Request) -> dict[str, Any]:
        method = request.method
        if method == "chat.send":
            return self._accept_send(connection, request.params)
        if method == "chat.abort":
            return await self._abort(request.params)
        if method == "chat.history":
            return self._history(request.params)
        if method == "chat.inject":
            return await self._observe(request.params)
        raise BcnError(ErrorCode.UNKNOWN_METHOD, f"unknown method {method!r}")

    def _accept_send(self, connection: Connection, params: dict[str, Any]) -> dict[str, Any]:
        """ACK at once with the run id; the answer runs in its own task.

        The run id is the delivery's `idempotency_key` when BCN sends one (a repeat of a
        delivery gets the same run back and is not answered twice), else a fresh one.
        The ACK is written by the connection right after this returns, before the new task
        gets its first turn, so the run's events always follow the ACK on the wire.
        """
        handler = self._message_handler
        if handler is None:
            raise BcnError(ErrorCode.UNAVAILABLE, "this bot only observes; it has no answers")
        message = IncomingMessage.from_params(params, require_session_id=self.run_events)
        key = params.get("idempotency_key")
        if isinstance(key, str) and key and (key in self._runs or key in self._finished_runs):
            log.info("delivery %s repeated; acknowledged with its existing run", key)
            return {"run_id": key}
        self.history.record(
            message.session_key, "user", message.text, message.timestamp or now_ms(),
            session_id=message.bcs_group_id,
        )
        run_id = key if isinstance(key, str) and key else f"run-{uuid.uuid4().hex}"
        run = Run(
            run_id,
            session_key=message.session_key,
            bcs_group_id=message.bcs_group_id,
            emit=partial(_emit, connection),
            on_final=self._record_final,
            dialect=self._dialect(run_id, message),
            bot_name=self.name,
        )
        task = asyncio.create_task(self._answer(handler, message, run), name=f"bot-{run_id}")
        self._runs[run_id] = _ActiveRun(run, task, connection)
        return {"run_id": run_id}

    def _dialect(self, run_id: str, message: IncomingMessage) -> Dialect:
        if self.run_events and message.bcs_session_id:
            return UnifiedDialect(run_id, message.bcs_session_id)
        return LegacyDialect(run_id, message.bcs_group_id)

    async def _answer(self, handler: MessageHandler, message: IncomingMessage, run: Run) -> None:
        """Run the handler so that the run always ends with exactly one terminal event."""
        try:
            try:
                result = await handler(message, run)
            except (asyncio.CancelledError, ConnectionClosed):
                raise
            except Exception as exc:
                log.exception("run %s: the message handler failed", run.run_id)
                if not run.finished:
                    await run.error(_short_error(exc))
                return
            if run.finished:
                return
            if result is not None and not isinstance(result, str):
                log.warning("run %s: handler returned %s, not str or None; ignored",
                            run.run_id, type(result).__name__)
                result = None
            try:
                await run.final(result if isinstance(result, str) else run.streamed_text)
            except FrameTooLarge as exc:  # not sent: the run fails, the connection lives
                log.warning("run %s: %s", run.run_id, exc)
                await run.error(_short_error(exc))
        except ConnectionClosed:
            log.info("run %s: connection closed before the answer was sent", run.run_id)
        except RunFinished as exc:
            log.warning("%s", exc)
        finally:
            self._runs.pop(run.run_id, None)
            self._finished_runs[run.run_id] = run.session_key
            while len(self._finished_runs) > self._finished_runs_kept:
                self._finished_runs.popitem(last=False)

    def _record_final(self, run: Run, text: str) -> None:
        self.history.record(run.session_key, "assistant", text, now_ms(),
                            session_id=run.bcs_group_id)

    async def _abort(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel exactly one run and answer once it has stopped."""
        run_id = params.get("run_id")
        session_key = params.get("session_key")
        if not isinstance(run_id, str) or not run_id:
            raise BcnError(ErrorCode.INVALID_REQUEST, "'run_id' must be a non-empty string")
        if not isinstance(session_key, str) or not session_key:
            raise BcnError(ErrorCode.INVALID_REQUEST, "'session_key' must be a non-empty string")
        active = self._runs.get(run_id)
        owner = active.run.session_key if active is not None else self._finished_runs.get(run_id)
        if owner is None:
            raise BcnError(ErrorCode.NOT_FOUND, f"no run {run_id!r}")
        if owner != session_key:
            raise BcnError(ErrorCode.INVALID_REQUEST,
                           f"run {run_id!r} does not belong to session {session_key!r}")
        if active is None or not active.run.mark_aborted():
            return {"aborted": False, "aborted_run_ids": []}
        active.task.cancel()
        done, _ = await asyncio.wait({active.task}, timeout=self.abort_grace)
        if not done:
            log.warning("run %s: handler ignored cancellation; its output stays suppressed",
                        run_id)
        try:
            await active.run.announce_aborted()
        except ConnectionClosed:
            pass
        return {"aborted": True, "aborted_run_ids": [run_id]}

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        session_key = params.get("session_key")
        if not isinstance(session_key, str) or not session_key:
            raise BcnError(ErrorCode.INVALID_REQUEST, "'session_key' must be a non-empty string")
        limit = params.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise BcnError(ErrorCode.INVALID_REQUEST, "'limit' must be a non-negative integer")
        return {
            "session_key": session_key,
            "session_id": self.history.session_id(session_key) or session_key.split(":", 1)[0],
            "messages": self.history.messages(session_key, limit),
        }

    async def _observe(self, params: dict[str, Any]) -> dict[str, Any]:
        """Record and hand a `chat.inject` to the observe handler, answering once it started.

        With `max_observing` handlers still running, the answer waits for one to finish:
        BCN then sees this bot behind, and sheds what it cannot take, instead of this
        process piling up handlers without bound.
        """
        message = IncomingMessage.from_params(params, observe_only=True,
                                              require_session_id=self.run_events)
        if message.text:
            self.history.record(
                message.session_key, "user", message.text, message.timestamp or now_ms(),
                session_id=message.bcs_group_id,
            )
        if self._observe_handler is not None:
            await self._observing.acquire()
            task = asyncio.create_task(self._run_observer(self._observe_handler, message))
            self._background.add(task)
            task.add_done_callback(self._observed)
        return {}

    def _observed(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        self._observing.release()

    async def _on_event(self, event: Event) -> None:
        """Events from BCN; the hub's `bot.backpressure` notices are the ones the SDK reads."""
        if event.event != "bot.backpressure":
            return
        payload = event.payload
        self.backpressure = dict(payload)
        shed = payload.get("shed")
        if payload.get("state") == "caught_up" and isinstance(shed, int) and shed > 0:
            self.injects_shed += shed
        log.warning("BCN backpressure (%s): %s", payload.get("state") or "notice",
                    payload.get("message") or payload)

    @staticmethod
    async def _run_observer(handler: ObserveHandler, message: IncomingMessage) -> None:
        try:
            await handler(message)
        except Exception:
            log.exception("the observe handler failed for session %s", message.session_key)

    async def _cancel_runs_of(self, connection: Connection) -> None:
        """A dropped connection ends its runs: BCN forgets them, and their output has
        nowhere to go."""
        tasks = []
        for active in list(self._runs.values()):
            if active.connection is connection:
                active.run.mark_aborted()
                active.task.cancel()
                tasks.append(active.task)
        if tasks:
            await asyncio.wait(tasks, timeout=self.abort_grace)


async def _emit(
    connection: Connection, name: str, payload: dict[str, Any], seq: int | None
) -> None:
    await connection.send_event(name, payload, seq=seq)


def _short_error(exc: Exception) -> str:
    detail = str(exc).strip()
    text = f"The bot failed to answer ({type(exc).__name__}: {detail})" if detail else (
        f"The bot failed to answer ({type(exc).__name__})"
    )
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 1] + "…"
