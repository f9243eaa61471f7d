"""What every Redis concern store is built from: the client, the scripts and the key names."""

from __future__ import annotations

from redis.asyncio import Redis

from bridge.store.redis.keys import Keys
from bridge.store.redis.scripts import Scripts


class RedisConcern:
    __slots__ = ("_keys", "_redis", "_scripts")

    def __init__(self, redis: Redis, scripts: Scripts, keys: Keys) -> None:
        self._redis = redis
        self._scripts = scripts
        self._keys = keys
