"""The application-service registration the homeserver reads (`app_service_config_files`).

Built from the account config alone, so `bcn-bridge matrix registration -c FILE` and the
adapter agree on the tokens, the URL and the namespace by construction.
"""

from __future__ import annotations

import re
from typing import Any

from adapters.matrix.config import MatrixAccountConfig


def puppet_regex(config: MatrixAccountConfig) -> str:
    """The user ids the bridge owns for its bots: `@<prefix>…:<server_name>`."""
    return f"@{re.escape(config.puppet_prefix)}.*:{re.escape(config.server_name)}"


def registration(config: MatrixAccountConfig, *, rate_limited: bool = False) -> dict[str, Any]:
    """The registration for `config`'s account.

    `rate_limited` is the registration's `rate_limited`: False (the default, what
    `bcn-bridge matrix registration` prints) exempts the bots' users from the homeserver's
    message rate limits; True leaves them limited like anyone else, so the homeserver answers
    their sends with `429 M_LIMIT_EXCEEDED` (the tests use it to exercise the outbox's wait).
    The bridge user itself is never limited by Synapse either way.
    """
    return {
        "id": config.appservice_id,
        "url": config.push_url,
        "as_token": config.as_token.get_secret_value(),
        "hs_token": config.hs_token.get_secret_value(),
        "sender_localpart": config.bot_localpart,
        "namespaces": {
            "users": [{"exclusive": True, "regex": puppet_regex(config)}],
            "aliases": [],
            "rooms": [],
        },
        "rate_limited": rate_limited,
        "receive_ephemeral": False,
    }
