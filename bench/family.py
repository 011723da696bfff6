#!/usr/bin/env python3
"""F1, the lock family in its users' shape (issue 37): reads the family-worker event files of one
scripts/bench run and computes, per kind, what redlock4j's published benchmark reports (ops/s,
wait p50/p99, mean wait, overlaps, FIFO violations) plus the handoff overhead.

Files: RAW/f1-<run>-<role>-w<i>.events, written by `rlock_bench family-worker` (ns of
CLOCK_MONOTONIC, one clock for every process of the machine):
  roles lock, read, write: `<requested> <acquired> <releasing>` (`-1 -1`: still waiting when the
  phase ended); role counter: `<round> <last count-down sent> 0`; role waiter: `<round>
  <released> 0`.

Definitions (docs/benchmarks.md, F1):
  wait         acquired - requested; a request still waiting when the phase ended counts with
               the wait it had (a lower bound), and is counted as `unfinished`.
  overlaps     acquisitions that began while more holders than the kind allows held: 1 for the
               exclusive kinds and a writer, the permits for the semaphore; readers share.
  FIFO         (fair lock) acquisitions made while a request made more than FIFO_TOLERANCE_NS
               earlier still waited.
  handoff      the time the lock sat free while someone waited for it: for an acquisition made
               with nobody holding (fewer than the permits, for the semaphore), the time since
               the latest release before it, if a request older than that release was still
               waiting then. For the exclusive kinds this is the interval between two
               acquisitions minus the hold as it was held.
"""
import bisect
import glob
import math
import os
import re

FIFO_TOLERANCE_NS = 1_000_000  # requests 1 ms apart or less may reach the server in either order

RUNS = ["reentrant", "fair", "rw-writers", "rw-readers", "semaphore", "multi", "latch"]
CAPACITY = {"semaphore": 2}


def percentile(vals, p):
    """Nearest rank, as bench/report.py and the drivers compute theirs."""
    if not vals:
        return None
    s = sorted(vals)
    rank = max(1, int(math.ceil(p / 100.0 * len(s))))
    return s[min(rank, len(s)) - 1]


def read_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                out.append(tuple(int(x) for x in parts))
    return out


def load(raw):
    """{run: {role: [[events of worker 0], [events of worker 1], ...]}}"""
    runs = {}
    pattern = re.compile(r"f1-(.+)-(lock|read|write|counter|waiter)-w(\d+)\.events$")
    for path in sorted(glob.glob(os.path.join(raw, "f1-*.events"))):
        m = pattern.search(os.path.basename(path))
        if not m:
            continue
        run, role, worker = m.group(1), m.group(2), int(m.group(3))
        roles = runs.setdefault(run, {})
        workers = roles.setdefault(role, {})
        workers[worker] = read_lines(path)
    return {run: {role: [w[i] for i in sorted(w)] for role, w in roles.items()}
            for run, roles in runs.items()}


def ms(ns):
    return None if ns is None else ns / 1e6


def lock_stats(run, roles, seconds, hold_ms):
    """Stats of a run of locks (every role but the latch's)."""
    acq = []  # (requested, acquired, releasing, role, worker)
    starved = []  # (requested, role)
    for role, workers in roles.items():
        for w, events in enumerate(workers):
            for req, got, rel in events:
                if got < 0:
                    starved.append((req, role))
                else:
                    acq.append((req, got, rel, role, w))
    if not acq:
        return {"run": run, "acquisitions": 0}
    end = max(max(a[2] for a in acq), max((s[0] for s in starved), default=0))
    acq.sort(key=lambda a: a[1])
    capacity = CAPACITY.get(run.split("-")[0], 1)
    # Overlaps: a sweep over the holds in acquisition order.
    overlaps = 0
    active = []  # (releasing, role)
    for req, got, rel, role, w in acq:
        active = [a for a in active if a[0] > got]
        if role == "read":
            if any(r == "write" for _, r in active):
                overlaps += 1
        elif len(active) >= capacity:
            overlaps += 1
        active.append((rel, role))
    # FIFO violations (meaningful for the fair lock only).
    fifo = 0
    for i, (req_b, got_b, _, _, w_b) in enumerate(acq):
        for req_a, got_a, _, _, w_a in acq[i + 1:]:
            if w_a != w_b and req_a + FIFO_TOLERANCE_NS < req_b:
                fifo += 1
                break
        else:
            if any(s_req + FIFO_TOLERANCE_NS < req_b for s_req, _ in starved):
                fifo += 1
    # Handoff: the time the lock sat free while someone waited.
    releases = sorted(a[2] for a in acq)
    requests = [(a[0], a[1]) for a in acq] + [(s[0], end + 1) for s in starved]
    handoffs = []
    for req, got, rel, role, w in acq:
        held = sum(1 for a in acq if a[1] < got and a[2] > got)
        if held >= capacity:
            continue
        i = bisect.bisect_right(releases, got) - 1
        if i < 0:
            continue
        last = releases[i]
        if any(r_req < last and r_got >= got for r_req, r_got in requests):
            handoffs.append(got - last)
    waits = [a[1] - a[0] for a in acq] + [end - s[0] for s in starved]

    def per(role_filter):
        w_acq = [a[1] - a[0] for a in acq if role_filter(a[3])]
        w_all = w_acq + [end - s[0] for s in starved if role_filter(s[1])]
        return {
            "acquisitions": len(w_acq),
            "ops_per_s": len(w_acq) / seconds,
            "wait_p50_ms": ms(percentile(w_all, 50)),
            "wait_p99_ms": ms(percentile(w_all, 99)),
            "wait_mean_ms": ms(sum(w_all) / len(w_all)) if w_all else None,
            "unfinished": sum(1 for s in starved if role_filter(s[1])),
        }

    out = {"run": run, "hold_ms": hold_ms, "seconds": seconds}
    out.update(per(lambda r: True))
    out["wait_p50_ms"] = ms(percentile(waits, 50))
    out["overlaps"] = overlaps
    out["fifo_violations"] = fifo
    out["handoffs"] = len(handoffs)
    out["handoff_p50_ms"] = ms(percentile(handoffs, 50))
    out["handoff_p99_ms"] = ms(percentile(handoffs, 99))
    out["workers_served"] = len({(a[3], a[4]) for a in acq})
    out["workers"] = sum(len(ws) for ws in roles.values())
    if "write" in roles:
        out["writers"] = per(lambda r: r == "write")
        out["readers"] = per(lambda r: r == "read")
        total = out["acquisitions"]
        out["writer_share"] = out["writers"]["acquisitions"] / total if total else 0.0
    return out


def latch_stats(roles, seconds, hold_ms):
    zero = {k: t for counter in roles.get("counter", []) for k, t, _ in counter}
    latencies = []
    for waiter in roles.get("waiter", []):
        for k, t, _ in waiter:
            if k in zero:
                latencies.append(max(0, t - zero[k]))
    out = {"run": "latch", "hold_ms": hold_ms, "seconds": seconds,
           "acquisitions": len(latencies), "ops_per_s": len(latencies) / seconds,
           "rounds": len(zero),
           "wait_p50_ms": ms(percentile(latencies, 50)),
           "wait_p99_ms": ms(percentile(latencies, 99)),
           "wait_mean_ms": ms(sum(latencies) / len(latencies)) if latencies else None,
           "overlaps": 0, "fifo_violations": 0, "unfinished": 0,
           "handoffs": len(latencies),
           "handoff_p50_ms": ms(percentile(latencies, 50)),
           "handoff_p99_ms": ms(percentile(latencies, 99)),
           "workers": len(roles.get("waiter", [])) + len(roles.get("counter", []))}
    return out


def analyse(raw, seconds, hold_ms):
    """Per run, in RUNS' order: the stats of docs/benchmarks.md's F1 table."""
    runs = load(raw)
    out = []
    for run in RUNS:
        if run not in runs:
            continue
        if run == "latch":
            out.append(latch_stats(runs[run], seconds, hold_ms))
        else:
            out.append(lock_stats(run, runs[run], seconds, hold_ms))
    return out


if __name__ == "__main__":
    import json
    import sys
    print(json.dumps(analyse(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])), indent=1))
