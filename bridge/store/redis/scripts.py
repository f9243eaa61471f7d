"""The Lua scripts: steps that must check and write in one atomic step across instances.

A script runs on the server with nothing else in between, which is what a conditional write
needs ("queue this unless its key was seen", "renew only if it is still mine"). Steps that
need the Python rules (`guard_turn`, a conversation change) use WATCH/MULTI instead
(`optimistic.py`), so each rule has one home.

Scripts never re-encode JSON (Lua's cjson would round big integers such as microsecond
times); they only move strings they are given or hold. Keys that are known beforehand come
in KEYS; an item key that depends on an id the script allocates is built from a prefix in
ARGV, which is why this store needs a single Redis (or one hash slot), not a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

ENQUEUE = """
-- KEYS: seen zset, id counter, queue zset, and for an entry of a group (an outbox lane):
-- the group's zset of ids, the set of groups with entries.
-- ARGV: once key ('' for none), seen-at µs, item key prefix, group ('' for none), then the
-- item's list elements.
-- Returns the new id, or false when `once` had been seen (nothing is queued then).
if ARGV[1] ~= '' and redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 0 then
  return false
end
local id = redis.call('INCR', KEYS[2])
redis.call('RPUSH', ARGV[3] .. id, unpack(ARGV, 5))
redis.call('ZADD', KEYS[3], id, id)
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[4], id, id)
  redis.call('SADD', KEYS[5], ARGV[4])
end
return id
"""

DEQUEUE = """
-- KEYS: the item's list, the queue zset, and for an entry of a group: the group's zset,
-- the set of groups with entries. ARGV: id, group ('' for none).
-- A group left empty leaves the set in the same step, so a concurrent enqueue into it
-- (which re-adds it) is never lost from the set.
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[1])
  if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], ARGV[2]) end
end
return 1
"""

TAKE_OVER = """
-- KEYS: the lease, its token counter. ARGV: the dead holder, the new holder, TTL ms.
-- Granted (next token) if the lease is free or still the dead holder's; else false.
local current = redis.call('GET', KEYS[1])
if current then
  local holder = string.match(current, '^%d+:(.*)$')
  if holder ~= ARGV[1] and holder ~= ARGV[2] then return false end
  if holder == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return tonumber(string.match(current, '^(%d+):'))
  end
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. ARGV[2], 'PX', ARGV[3])
return token
"""

RECORD_PART = """
-- KEYS: the queued item's list. ARGV: list index (part + 1), JSON message id.
-- Returns 1, 0 when the item is gone (completed meanwhile), -1 when it has no such part.
local length = redis.call('LLEN', KEYS[1])
if length == 0 then return 0 end
if tonumber(ARGV[1]) >= length then return -1 end
redis.call('LSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

PRUNE = """
-- KEYS: an age index (zset), optionally a hash with one field per member.
-- ARGV: cut-off µs (exclusive), batch size, optionally a key prefix (+ member = a key to
-- delete with it). Removes at most one batch; returns how many it removed.
local doomed = redis.call('ZRANGE', KEYS[1], '-inf', '(' .. ARGV[1], 'BYSCORE',
                          'LIMIT', 0, tonumber(ARGV[2]))
if #doomed == 0 then return 0 end
redis.call('ZREM', KEYS[1], unpack(doomed))
if KEYS[2] then redis.call('HDEL', KEYS[2], unpack(doomed)) end
if ARGV[3] then
  for _, member in ipairs(doomed) do redis.call('UNLINK', ARGV[3] .. member) end
end
return #doomed
"""

HOLD = """
-- KEYS: seen zset, the lane's guard hash, the lane's held list.
-- ARGV: once key ('' for none), seen-at µs, keep, item JSON, TTL ms.
-- Returns 0 when `once` had been seen (nothing held or counted), else 1.
if ARGV[1] ~= '' and redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 0 then
  return 0
end
if redis.call('LLEN', KEYS[3]) < tonumber(ARGV[3]) then
  redis.call('RPUSH', KEYS[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
else
  redis.call('HINCRBY', KEYS[2], 'held_over', 1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
"""

ACQUIRE = """
-- KEYS: the lease (string 'token:holder'), its token counter. ARGV: holder, TTL ms.
-- Free or expired: a new grant with the next token. Ours: extended, same token.
-- Another holder's: false.
local current = redis.call('GET', KEYS[1])
if current then
  local token, holder = string.match(current, '^(%d+):(.*)$')
  if holder ~= ARGV[1] then return false end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(token)
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. ARGV[1], 'PX', ARGV[2])
return token
"""

RENEW = """
-- KEYS: the lease. ARGV: 'token:holder' as granted, TTL ms. 1 if extended, 0 if lost.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE = """
-- KEYS: the lease. ARGV: 'token:holder' as granted. Deletes it only if it is still ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

CLAIM = """
-- KEYS: the seen zset, the key's claim (string: its holder, expiring with the claim).
-- ARGV: the seen key, holder, TTL ms. 1 if claimed; 0 if seen, or claimed by anyone (the
-- same holder too) and not expired yet: PX ends a dead claimant's claim on Redis's clock.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return 0
"""

TAKE_CLAIM = """
-- KEYS: the seen zset, the key's claim. ARGV: the seen key, the dead holder, the new
-- holder, TTL ms. 1 if the claim moved to the new holder; 0 if seen or held by another.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1
"""

COUNT = """
-- KEYS: count hashes (status -> n). ARGV: a status, 1 or -1.
-- Counts the status up or down in each; a count down to 0 leaves its hash (an empty hash
-- vanishes), so counts of chats and bots that have no conversations left take no memory.
for _, key in ipairs(KEYS) do
  if redis.call('HINCRBY', key, ARGV[1], ARGV[2]) <= 0 then redis.call('HDEL', key, ARGV[1]) end
end
return #KEYS
"""

FORGET_UNPAUSED = """
-- KEYS: the set of paused lanes, one lane's guard hash. ARGV: the lane.
-- Drops the lane from the set unless its guard says paused (it expired, or a human spoke):
-- checked and removed in one step, so a lane that pauses again meanwhile stays listed.
if redis.call('HGET', KEYS[2], 'paused') == '1' then return 0 end
return redis.call('SREM', KEYS[1], ARGV[1])
"""

PACE = """
-- KEYS: one sorted set per budget (send times in ms). ARGV: a unique member for this send
-- ('' only asks), then per budget its limit and window (ms).
-- Returns 0 after spending from every budget, or the ms until all have room (nothing spent).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 * i])
  local window = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local sent = redis.call('ZCARD', key)
  if sent >= limit then
    local freeing = redis.call('ZRANGE', key, sent - limit, sent - limit, 'WITHSCORES')
    local until_free = tonumber(freeing[2]) + window - now
    if until_free > wait then wait = until_free end
  end
end
if wait > 0 or ARGV[1] == '' then return wait end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[1])
  redis.call('PEXPIRE', key, tonumber(ARGV[2 * i + 1]))
end
return 0
"""


@dataclass(frozen=True, slots=True)
class Scripts:
    """The scripts registered on one client (EVALSHA, loaded again if the server forgot)."""

    enqueue: AsyncScript
    record_part: AsyncScript
    prune: AsyncScript
    hold: AsyncScript
    acquire: AsyncScript
    renew: AsyncScript
    release: AsyncScript
    dequeue: AsyncScript
    take_over: AsyncScript
    count: AsyncScript
    forget_unpaused: AsyncScript
    claim: AsyncScript
    take_claim: AsyncScript
    pace: AsyncScript

    @classmethod
    def register(cls, redis: Redis) -> Scripts:
        return cls(
            enqueue=redis.register_script(ENQUEUE),
            record_part=redis.register_script(RECORD_PART),
            prune=redis.register_script(PRUNE),
            hold=redis.register_script(HOLD),
            acquire=redis.register_script(ACQUIRE),
            renew=redis.register_script(RENEW),
            release=redis.register_script(RELEASE),
            dequeue=redis.register_script(DEQUEUE),
            take_over=redis.register_script(TAKE_OVER),
            count=redis.register_script(COUNT),
            forget_unpaused=redis.register_script(FORGET_UNPAUSED),
            claim=redis.register_script(CLAIM),
            take_claim=redis.register_script(TAKE_CLAIM),
            pace=redis.register_script(PACE),
        )
