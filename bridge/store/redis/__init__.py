"""The Redis store: several bridge instances share one Redis (docs/scale-out.md).

`RedisStore` lives in `bridge.store.redis.store`; this package's top level only holds what
checking a URL needs (`url.py`), so loading a config does not import redis-py (a tenth of a
second) unless a Redis store is actually opened.
"""

from bridge.store.redis.url import DEFAULT_PREFIX, RedisUrl, parse_redis_url

__all__ = ["DEFAULT_PREFIX", "RedisUrl", "parse_redis_url"]
