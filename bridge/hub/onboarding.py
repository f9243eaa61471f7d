"""HTTP onboarding, as the BCN server offers it, so a bot can register itself.

- `POST /register?token=…&bot-name=…` — `token` is one of the hub's `register_tokens`
  (an onboarding token an operator hands out). Creates a bot with that name and answers
  `{bot_name, bot_uuid, bot_token}` (`Cache-Control: no-store`). Missing parameters or a
  name outside 2–64 characters are 400 `bad_request`; a wrong token 401 `unauthorized`; a
  taken (or look-alike) name 409 `conflict`; too many registrations from one address 429
  `rate_limited` with `Retry-After`; a full `auto_join` group 403 `group_full`.
- `POST /bots/onboard` with `Authorization: Bearer <bot token>` and a JSON descriptor
  {`name`, `summary`, `domains`, `skills`, `scopes`} — keeps the descriptor and answers
  `{onboarded: true, bot_uuid, name, capabilities}`. A missing or unknown token is 401; a
  body that is not such an object 400; a `name` other than the bot's own 409 (names are
  fixed once registered, so routing by name stays stable).

Every error body is `{error, message}`. Tokens are compared in constant time and never
logged.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from bridge.hub.admission import RegistrationRefused
from bridge.hub.config import check_bot_name
from bridge.hub.registry import NameTaken
from bridge.hub.state import HubState
from bridge.hub.tokens import TokenSet
from bridge.web.bad_input import BadInput, read_json

log = logging.getLogger(__name__)

NAME_LENGTH = (2, 64)
LIST_FIELDS = ("domains", "skills", "scopes")


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status)


def _refused(refused: RegistrationRefused) -> web.Response:
    """429 with `Retry-After` for the rate limit; 403 for a full group."""
    if refused.retry_after is not None:
        response = _error(429, refused.code, refused.message)
        response.headers["Retry-After"] = str(refused.retry_after)
        return response
    return _error(403, refused.code, refused.message)


class Onboarding:
    def __init__(self, state: HubState) -> None:
        self.state = state
        self._tokens = TokenSet(state.config.register_tokens)

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/register", self.register)
        app.router.add_post("/bots/onboard", self.onboard)

    async def register(self, request: web.Request) -> web.Response:
        token = request.query.get("token", "")
        name = (request.query.get("bot-name") or request.query.get("bot_name") or "").strip()
        if not token:
            return _error(400, "bad_request", "missing required parameter: token")
        if not name:
            return _error(400, "bad_request", "missing required parameter: bot-name")
        if not NAME_LENGTH[0] <= len(name) <= NAME_LENGTH[1]:
            return _error(400, "bad_request",
                          f"bot-name must be 2-64 characters, got {len(name)}")
        try:
            name = check_bot_name(name)
        except ValueError as exc:
            return _error(400, "bad_request", str(exc))
        try:  # before the token check: the rate also bounds guessing at register tokens
            self.state.admission.check(self.state, request.remote, name)
        except RegistrationRefused as refused:
            return _refused(refused)
        if not self._tokens.accepts(token):
            return _error(401, "unauthorized", "invalid register token")
        try:
            record, bot_token = self.state.registry.register(name)
        except NameTaken as exc:
            return _error(409, "conflict", str(exc))
        log.info("bot registered over HTTP: %s (%s)", record.name, record.bot_uuid)
        self.state.announce(self.state.groups.admit(record))
        return web.json_response(
            {"bot_name": record.name, "bot_uuid": record.bot_uuid, "bot_token": bot_token},
            headers={"Cache-Control": "no-store"},
        )

    async def onboard(self, request: web.Request) -> web.Response:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        record = self.state.registry.by_token(token.strip()) \
            if scheme.lower() == "bearer" and token.strip() else None
        if record is None:
            return _error(401, "unauthorized", "a valid bot token is required (Bearer)")
        try:
            body = await read_json(request)
        except BadInput as exc:
            return _error(400, "bad_request", f"the body must be a JSON object: {exc}")
        problem = _descriptor_problem(body)
        if problem:
            return _error(400, "bad_request", problem)
        name = body.get("name")
        if isinstance(name, str) and name.strip() and name.strip() != record.name:
            return _error(409, "conflict", f"bot names are fixed once registered; this bot "
                                           f"is {record.name!r}")
        descriptor = {"name": record.name, "summary": body.get("summary") or "",
                      **{key: body.get(key) or [] for key in LIST_FIELDS}}
        self.state.registry.onboard(record, descriptor)
        log.info("bot onboarded: %s (%s)", record.name, record.bot_uuid)
        return web.json_response({"onboarded": True, "bot_uuid": record.bot_uuid,
                                  "name": record.name, "capabilities": descriptor})


def _descriptor_problem(body: Any) -> str | None:
    """What is wrong with an onboarding descriptor, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    for key in ("name", "summary"):
        if body.get(key) is not None and not isinstance(body[key], str):
            return f"{key} must be a string"
    for key in LIST_FIELDS:
        items = body.get(key)
        if items is None:
            continue
        if not isinstance(items, list) or len(items) > 100:
            return f"{key} must be a list of at most 100 entries"
        for item in items:
            if key == "skills" and isinstance(item, dict) and isinstance(item.get("name"), str):
                continue
            if not isinstance(item, str):
                return f"{key} must hold strings" + (" or {name, description} objects"
                                                      if key == "skills" else "")
    if len(json.dumps(body)) > 64_000:
        return "the descriptor is too large (64 kB at most)"
    return None
