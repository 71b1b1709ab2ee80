"""The token buckets in Redis, so several edge replicas enforce one budget.

One Lua script reads, refills and updates all three buckets of a key and model
atomically, on Redis's own clock (so replicas with skewed clocks agree).
"""

from __future__ import annotations

import logging
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ...config import ModelLimits
from ...errors import Overloaded
from .limits import BUCKETS, Decision, Snapshot, snapshot

log = logging.getLogger(__name__)

# KEYS: the three buckets. ARGV[1]: take | give | peek; ARGV[2..4]: capacities;
# ARGV[5..7]: amounts (to take, or to give back). Returns allowed, wait, now, levels...
_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local mode = ARGV[1]
local n = #KEYS
local levels, wait = {}, 0
for i = 1, n do
  local cap = tonumber(ARGV[1 + i])
  local amount = tonumber(ARGV[1 + n + i])
  local state = redis.call('HMGET', KEYS[i], 'level', 'ts')
  local level = cap
  if state[1] then
    local elapsed = math.max(0, now - tonumber(state[2]))
    level = math.min(cap, tonumber(state[1]) + elapsed * cap / 60)
  end
  levels[i] = level
  if mode == 'take' and amount > level then
    wait = math.max(wait, (amount - level) * 60 / cap)
  end
end
local write = (mode == 'take' and wait == 0) or mode == 'give'
if write then
  for i = 1, n do
    local cap = tonumber(ARGV[1 + i])
    local amount = tonumber(ARGV[1 + n + i])
    if mode == 'take' then
      levels[i] = levels[i] - amount
    else
      levels[i] = math.min(cap, levels[i] + amount)
    end
    redis.call('HSET', KEYS[i], 'level', tostring(levels[i]), 'ts', tostring(now))
    redis.call('EXPIRE', KEYS[i], 120)
  end
end
local out = {wait == 0 and 1 or 0, tostring(wait), tostring(now)}
for i = 1, n do out[#out + 1] = tostring(levels[i]) end
return out
"""


class RedisLimiter:
    def __init__(self, url: str, prefix: str = "b3os:rl") -> None:
        # bounded waits: a Redis that hangs is refused like one that is down
        self._redis: Any = aioredis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
        self._script = self._redis.register_script(_SCRIPT)
        self._prefix = prefix

    def _keys(self, key_id: str, model_id: str) -> list[str]:
        return [f"{self._prefix}:{key_id}:{model_id}:{name}" for name in BUCKETS]

    async def _run(self, mode: str, key_id: str, model_id: str, limits: ModelLimits,
                   amounts: tuple[int, int, int]) -> tuple[bool, float, Snapshot]:
        caps = limits.capacities
        try:
            out = await self._script(keys=self._keys(key_id, model_id),
                                     args=[mode, *caps, *amounts])
        except RedisError as exc:   # its text names hosts and ports: for the log only
            log.warning("the rate-limit store did not answer: %s", exc)
            raise Overloaded("the rate-limit store is unreachable right now; retry shortly",
                             code="limits_unavailable", retry_after=1) from exc
        levels = [float(v) for v in out[3:]]
        return bool(int(out[0])), float(out[1]), snapshot(float(out[2]), levels, caps)

    async def take(self, key_id: str, model_id: str, limits: ModelLimits,
                   amounts: tuple[int, int, int]) -> Decision:
        allowed, wait, snap = await self._run("take", key_id, model_id, limits, amounts)
        return Decision(allowed, wait, snap)

    async def give_back(self, key_id: str, model_id: str, limits: ModelLimits,
                        output_tokens: int, input_tokens: int = 0) -> None:
        await self._run("give", key_id, model_id, limits, (0, input_tokens, output_tokens))

    async def peek(self, key_id: str, model_id: str, limits: ModelLimits) -> Snapshot:
        return (await self._run("peek", key_id, model_id, limits, (0, 0, 0)))[2]

    async def close(self) -> None:
        await self._redis.aclose()
