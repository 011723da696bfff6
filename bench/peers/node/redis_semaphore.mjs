#!/usr/bin/env node
// Benchmark driver for npm `redis-semaphore`'s Mutex with ioredis (see bench/DRIVERS.md).
//
//   node bench/peers/node/redis_semaphore.mjs <s1|s2|s3-worker> --port PORT [--seconds S]
//        [--concurrency C] [--key KEY] [--out FILE] [--prefix P]
//
// Waiting strategy of the library: `acquire` is SET key id PX lockTimeout NX; on failure it
// sleeps retryInterval ms (default 10) and retries until acquireTimeout (default 10 s).
// While held, a setInterval refreshes the lease every 0.8 * lockTimeout (default 8 s).
// All acquire options are the library defaults. Note the library stores the lock under
// "mutex:<key>", so the Redis key is "mutex:" + prefix + key.

import { Mutex, defaultTimeoutOptions } from "redis-semaphore";
import { runDriver, pkgVersion } from "./common.mjs";

await runDriver("redis-semaphore", (client) => {
  const makeLocker = (key) => {
    const mutex = new Mutex(client, key); // default options
    return {
      lock: () => mutex.acquire(),
      unlock: () => mutex.release(),
    };
  };
  const d = defaultTimeoutOptions;
  return {
    makeLocker,
    params: {
      lock_timeout_ms: d.lockTimeout,
      acquire_timeout_ms: d.acquireTimeout,
      retry_interval_ms: d.retryInterval,
      refresh_interval_ms: Math.round(d.lockTimeout * 0.8),
      redis_key_prefix: "mutex:",
      redis_semaphore_version: pkgVersion("redis-semaphore"),
      ioredis_version: pkgVersion("ioredis"),
    },
  };
});
