"""`RedisStore`: every concern in one Redis database, shared by every bridge instance.

Opening checks the server answers (PING) before anything else runs, so a wrong host, port,
password or database number fails at start with one line naming `host:port/db`, not later
in the middle of relaying a message.
"""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bridge.store.base import Store
from bridge.store.opening import StoreUnavailable
from bridge.store.redis.connections import connection_class
from bridge.store.redis.conversations import RedisConversationStore
from bridge.store.redis.keys import Keys
from bridge.store.redis.leases import RedisLeaseStore
from bridge.store.redis.loop_guard import RedisLoopGuardStore
from bridge.store.redis.pacing import RedisPacingStore
from bridge.store.redis.pauses import RedisPauseStore
from bridge.store.redis.pool import FairConnectionPool
from bridge.store.redis.relay import (
    RedisMessageMapStore,
    RedisOutboxStore,
    RedisSeenStore,
    RedisSpoolStore,
)
from bridge.store.redis.scripts import Scripts
from bridge.store.redis.streams import RedisStreamStore
from bridge.store.redis.url import RedisUrl

# Connections one instance opens at most; a caller past that waits for one to be free
# (an update holds its connection from WATCH to EXEC, a few round trips), in the order asked.
MAX_CONNECTIONS = 32
POOL_WAIT_SECONDS = 20
CONNECT_TIMEOUT_SECONDS = 5
COMMAND_TIMEOUT_SECONDS = 30


class RedisStore(Store):
    """A store several bridge instances share; `redis://host:port/db?prefix=…` opens one."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self.redis = redis
        self.keys = keys = Keys(prefix)
        scripts = Scripts.register(redis)
        self.conversations = RedisConversationStore(redis, scripts, keys)
        self.seen = RedisSeenStore(redis, scripts, keys)
        outbox = RedisOutboxStore(redis, scripts, keys)
        self.outbox = outbox
        self.spool = RedisSpoolStore(redis, scripts, keys)
        self.loop_guard = RedisLoopGuardStore(redis, scripts, keys, outbox.queue)
        self.streams = RedisStreamStore(redis, scripts, keys)
        self.leases = RedisLeaseStore(redis, scripts, keys)
        self.message_map = RedisMessageMapStore(redis, scripts, keys)
        self.pauses = RedisPauseStore(redis, scripts, keys)
        self.pacing = RedisPacingStore(redis, scripts, keys)

    async def close(self) -> None:
        await self.redis.aclose()


def client(url: RedisUrl) -> Redis:
    """A client for the URL: strings decoded, bounded pool, timeouts on connect and reply."""
    options: dict[str, object] = {"connection_class": connection_class(url.tls)}
    if url.tls:
        if url.ssl_ca_certs is not None:
            options["ssl_ca_certs"] = url.ssl_ca_certs
        if url.ssl_cert_reqs is not None:
            options["ssl_cert_reqs"] = url.ssl_cert_reqs
    pool = FairConnectionPool(
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_SECONDS,
        host=url.host,
        port=url.port,
        db=url.db,
        username=url.username,
        password=url.password,
        decode_responses=True,
        socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
        socket_timeout=COMMAND_TIMEOUT_SECONDS,
        **options,
    )
    return Redis.from_pool(pool)  # the client owns the pool: closing one closes both


async def open_redis_store(url: RedisUrl) -> RedisStore:
    """Connect and check the server answers; StoreUnavailable (an OSError) if it does not."""
    redis = client(url)
    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        await redis.aclose()
        reason = str(exc) or type(exc).__name__
        if url.password:
            reason = reason.replace(url.password, "***")
        raise StoreUnavailable(f"cannot open the Redis store at {url.where}: {reason}") from None
    return RedisStore(redis, url.prefix)
