"""Shared secrets the hub accepts (link tokens, register tokens), checked in constant time."""

from __future__ import annotations

import hmac


class TokenSet:
    """A configured list of tokens; `accepts` compares against every one, every time.

    Comparing all of them (not stopping at the first match) keeps the time a check takes
    independent of which token, if any, matched.
    """

    def __init__(self, tokens: list[str]) -> None:
        self._tokens = [token.encode() for token in tokens]

    def accepts(self, token: str) -> bool:
        given = token.encode()
        return any([hmac.compare_digest(given, known) for known in self._tokens])
