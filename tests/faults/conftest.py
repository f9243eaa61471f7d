"""Fixtures of the fault tests: `redis_server`, a real Redis (see
tests/support/redis_server.py); each test takes a key prefix of its own (`prefixed`)."""

from tests.support.stores import redis_server

__all__ = ["redis_server"]
