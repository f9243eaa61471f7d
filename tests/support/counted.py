"""A store concern that counts calls of some of its methods: how a test checks that a path
reads the store no more often than it should, on the real store underneath."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


class CountedCalls:
    """Wraps `inner`; each named async method counts its calls in `calls[name]`, and every
    other attribute is `inner`'s own."""

    def __init__(self, inner: Any, *methods: str) -> None:
        self.inner = inner
        self.calls = dict.fromkeys(methods, 0)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name not in self.calls:
            return found
        return self._counting(name, found)

    def _counting(self, name: str, method: Callable[..., Awaitable[Any]]
                  ) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await method(*args, **kwargs)

        return counted
