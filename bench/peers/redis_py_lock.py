#!/usr/bin/python3
"""Benchmark driver for redis-py's ``redis.lock.Lock`` (see bench/DRIVERS.md).

Run with Debian's interpreter, which is where ``apt-get install python3-redis`` puts the
package (a pyenv/venv ``python3`` first on PATH will not see it):

    /usr/bin/python3 bench/peers/redis_py_lock.py s1 --port PORT [--seconds S] [--sleep 0.1]
    /usr/bin/python3 bench/peers/redis_py_lock.py s2 --port PORT --concurrency C [--sleep 0.001]
    /usr/bin/python3 bench/peers/redis_py_lock.py s3-worker --port PORT --key K --out FILE

Library name in the output: ``redis-py`` for ``--sleep 0.1`` (redis-py's default poll
interval), ``redis-py-tuned`` for any other value (the suite uses 0.001).

Waiting strategy of the library: ``Lock.acquire`` is ``SET key token NX PX lease``; when the
key is taken it ``time.sleep(sleep)`` and tries again (pure polling, no notification).
"""

import argparse
import json
import math
import os
import sys
import threading
import time

try:
    import redis
    from redis.lock import Lock  # noqa: F401  (the class under test; r.lock() returns it)
except ImportError as exc:  # pragma: no cover - environment problem
    sys.stderr.write(
        "redis_py_lock: cannot import redis-py (%s); install Debian's python3-redis "
        "(apt-get install -y python3-redis) and run this file with /usr/bin/python3\n" % exc
    )
    sys.exit(2)

WARMUP_S = 0.5
LEASE_S = 10.0  # lock timeout (lease); never expires during a pair or a 1 ms hold
S1_MAX_PAIRS = 2_000_000
S2_MAX_PAIRS_TOTAL = 10_000_000
S3_MAX_ACQUISITIONS = 1_000_000
ACQUIRE_GRACE_S = 5.0  # an acquire may wait until end-of-run + this, then it is a failure
WATCHDOG_MARGIN_S = 9.0  # hard stop at S + this, warm-up included (contract: < S + 10)
DEFAULT_SLEEP = 0.1  # redis-py's own default for Lock(sleep=...)


def log(msg):
    sys.stderr.write("redis_py_lock: %s\n" % msg)
    sys.stderr.flush()


def fail(msg, code=1):
    log("error: " + msg)
    sys.stderr.flush()
    os._exit(code)


def start_watchdog(seconds):
    limit = seconds + WATCHDOG_MARGIN_S

    def fire():
        fail("watchdog: run exceeded %.1f s, aborting" % limit, 3)

    t = threading.Timer(limit, fire)
    t.daemon = True
    t.start()
    return t


def percentile(sorted_vals, p):
    """Nearest-rank percentile of an ascending list."""
    n = len(sorted_vals)
    rank = max(1, int(math.ceil(p / 100.0 * n)))
    return sorted_vals[min(rank, n) - 1]


def latency_metrics(lat_ns):
    lat_ns.sort()
    n = len(lat_ns)
    if n == 0:
        return {"pairs": 0, "p50_us": None, "p90_us": None, "p99_us": None,
                "max_us": None, "mean_us": None}
    us = lambda v: round(v / 1000.0, 1)  # noqa: E731
    return {
        "pairs": n,
        "p50_us": us(percentile(lat_ns, 50)),
        "p90_us": us(percentile(lat_ns, 90)),
        "p99_us": us(percentile(lat_ns, 99)),
        "max_us": us(lat_ns[-1]),
        "mean_us": us(sum(lat_ns) / n),
    }


def make_client(port, concurrency):
    pool = redis.ConnectionPool(
        host="127.0.0.1",
        port=port,
        max_connections=max(1, concurrency) + 4,
        socket_timeout=5.0,
        socket_connect_timeout=5.0,
    )
    r = redis.Redis(connection_pool=pool)
    try:
        r.ping()
    except redis.RedisError as exc:
        fail("cannot reach redis at 127.0.0.1:%d: %s" % (port, exc))
    return r


def new_lock(r, name, args, blocking_timeout):
    return r.lock(name, timeout=LEASE_S, sleep=args.sleep, blocking_timeout=blocking_timeout)


def pair(lock):
    """One lock + unlock. Keys are private in s1/s2, so acquire never waits there."""
    if not lock.acquire():
        raise RuntimeError("acquire of %r timed out" % lock.name)
    lock.release()


def run_s1(r, args):
    key = args.prefix + "s1"
    lock = new_lock(r, key, args, args.seconds + ACQUIRE_GRACE_S)
    now = time.monotonic_ns
    t0 = now()
    warm_end = t0 + int(WARMUP_S * 1e9)
    while now() < warm_end:
        pair(lock)
    log("s1: warm-up done, recording %.1f s" % args.seconds)
    lat = []
    end = now() + int(args.seconds * 1e9)
    while len(lat) < S1_MAX_PAIRS:
        a = now()
        if a >= end:
            break
        pair(lock)
        lat.append(now() - a)
    return {"key": key}, latency_metrics(lat)


def run_s2(r, args):
    c = args.concurrency
    if c < 1:
        fail("--concurrency must be >= 1")
    per_task_cap = max(1, S2_MAX_PAIRS_TOTAL // c)
    counts = [0] * c
    errors = []
    barrier = threading.Barrier(c + 1)
    phase = {}

    def task(i):
        try:
            lock = new_lock(r, "%ss2:%d" % (args.prefix, i), args,
                            args.seconds + WARMUP_S + ACQUIRE_GRACE_S)
            barrier.wait()
            rec_start, rec_end = phase["rec_start"], phase["rec_end"]
            now = time.monotonic_ns
            n = 0
            while n < per_task_cap:
                if now() >= rec_end:
                    break
                pair(lock)
                done = now()
                if rec_start < done <= rec_end:
                    n += 1
            counts[i] = n
        except Exception as exc:  # noqa: BLE001
            errors.append("task %d: %r" % (i, exc))
            barrier.abort()

    threads = [threading.Thread(target=task, args=(i,), daemon=True) for i in range(c)]
    for t in threads:
        t.start()
    start = time.monotonic_ns()
    phase["rec_start"] = start + int(WARMUP_S * 1e9)
    phase["rec_end"] = phase["rec_start"] + int(args.seconds * 1e9)
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    log("s2: %d threads running (%.1f s warm-up + %.1f s recorded)"
        % (c, WARMUP_S, args.seconds))
    for t in threads:
        t.join()
    if errors:
        fail("; ".join(errors[:5]))
    pairs = sum(counts)
    return ({"key_pattern": args.prefix + "s2:<i>",
             "per_task_cap": per_task_cap,
             "connection_pool_max": max(1, c) + 4},
            {"pairs": pairs, "pairs_per_s": round(pairs / args.seconds, 1), "concurrency": c})


def run_s3(r, args):
    if not args.out:
        fail("s3-worker needs --out FILE")
    key = args.prefix + args.key
    lock = new_lock(r, key, args, None)
    now = time.monotonic_ns
    end = now() + int(args.seconds * 1e9)
    hard_end = end + int(ACQUIRE_GRACE_S * 1e9)
    lines = []
    while len(lines) < S3_MAX_ACQUISITIONS and now() < end:
        budget = (hard_end - now()) / 1e9
        if not lock.acquire(blocking_timeout=max(0.0, budget)):
            fail("s3: could not acquire %r within %.1f s of the run end" % (key, ACQUIRE_GRACE_S))
        t_acq = now()
        time.sleep(0.001)
        t_rel = now()
        lock.release()
        lines.append("%d %d\n" % (t_acq, t_rel))
        time.sleep(0.001)
    with open(args.out, "w") as f:
        f.writelines(lines)
    return ({"key": key, "lease_s": LEASE_S, "hold_ms": 1, "outside_ms": 1, "out": args.out},
            {"acquisitions": len(lines)})


def main():
    ap = argparse.ArgumentParser(description="redis-py Lock benchmark driver (bench/DRIVERS.md)")
    ap.add_argument("mode", choices=["s1", "s2", "s3-worker"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--key", default="s3")
    ap.add_argument("--out")
    ap.add_argument("--prefix", default="bench:")
    ap.add_argument("--sleep", type=float, default=DEFAULT_SLEEP,
                    help="redis-py Lock poll interval in seconds (default 0.1, redis-py's default)")
    args = ap.parse_args()
    if args.seconds <= 0:
        fail("--seconds must be > 0")
    if args.sleep <= 0:
        fail("--sleep must be > 0")

    start_watchdog(args.seconds)
    r = make_client(args.port, args.concurrency if args.mode == "s2" else 1)
    try:
        if args.mode == "s1":
            extra, metrics = run_s1(r, args)
        elif args.mode == "s2":
            extra, metrics = run_s2(r, args)
        else:
            extra, metrics = run_s3(r, args)
    except (redis.RedisError, RuntimeError, OSError) as exc:
        fail("%s: %r" % (args.mode, exc))

    params = {
        "seconds": args.seconds,
        "prefix": args.prefix,
        "sleep_s": args.sleep,
        "lease_s": LEASE_S,
        "redis_py_version": redis.__version__,
        "python": sys.version.split()[0],
    }
    if args.mode in ("s1", "s2"):
        params["warmup_s"] = WARMUP_S
    if args.mode == "s2":
        params["concurrency"] = args.concurrency
    params.update(extra)
    out = {
        "library": "redis-py" if args.sleep == DEFAULT_SLEEP else "redis-py-tuned",
        "mode": args.mode,
        "params": params,
        "metrics": metrics,
    }
    sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
