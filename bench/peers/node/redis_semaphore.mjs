#!/usr/bin/env node
// Benchmark driver for npm `redis-semaphore`'s Mutex with ioredis (see bench/DRIVERS.md).
//
//   node bench/peers/node/redis_semaphore.mjs <s1|s2|s3-worker> --port PORT [--seconds S]
//        [--concurrency C] [--key KEY] [--out FILE] [--prefix P] [--ports P1,P2,... [--tuned]]
//
// --ports (Q1): its RedlockMutex over one ioredis client per server; --tuned: retryInterval 1 ms
// (the default is 10 ms), the shortest sleep it can ask for.
//
// Waiting strategy of the library: `acquire` is SET key id PX lockTimeout NX; on failure it
// sleeps retryInterval ms (default 10) and retries until acquireTimeout (default 10 s).
// While held, a setInterval refreshes the lease every 0.8 * lockTimeout (default 8 s).
// All acquire options are the library defaults. Note the library stores the lock under
// "mutex:<key>", so the Redis key is "mutex:" + prefix + key.

import { Mutex, RedlockMutex, defaultTimeoutOptions } from "redis-semaphore";
import { runDriver, pkgVersion } from "./common.mjs";

await runDriver("redis-semaphore", (client, args, clients) => {
  const options = args.tuned ? { retryInterval: 1 } : {};
  const makeLocker = (key) => {
    const mutex = clients.length
      ? new RedlockMutex(clients, key, options)
      : new Mutex(client, key, options); // default options unless --tuned
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
      retry_interval_ms: options.retryInterval ?? d.retryInterval,
      refresh_interval_ms: Math.round(d.lockTimeout * 0.8),
      redis_key_prefix: "mutex:",
      redis_semaphore_version: pkgVersion("redis-semaphore"),
      ioredis_version: pkgVersion("ioredis"),
    },
  };
});
