#!/usr/bin/env python3
"""Read a timeline that mkc --profile wrote (NAME_profile_write, or
`mkc test --profile FILE`) and say where the step's time went.

    python3 tools/profile_report.py TRACE [--step N] [--png OUT] [--top K] [--nodes PART]
    python3 tools/profile_report.py TRACE --check [--tasks N] [--steps N]

The trace is Chrome trace-event JSON: per worker (tid) a "wait" slice
(the task waiting for its event) and then the task's own slice (category:
its op), and one "step N" slice per step on the steps track. Times are
microseconds with nanosecond digits.

The report, for one step (default: the last):
  - time by op kind: tasks, busy time summed over workers, its share, the
    time those tasks spent waiting first, the bytes their regions cover and
    the rate: per worker (bytes / busy time) and for the chip (bytes /
    the wall time during which any task of that kind ran);
  - the critical path: from the task that finished last, back through
    whatever it waited for: the producer whose signal came last when the
    task had to wait for it, else the task before it on the same worker;
    with the hand-off latency (signal to wake-up) on each event edge;
  - worker utilisation: busy / step time per worker;
  - with --png, a timeline picture: a row per worker, a colour per op kind;
  - with --nodes PART, each node whose name holds PART (model.layers.5.) in
    the order it began: its tiles, its span, its median and largest tile
    and the bytes it read over its span.
A TRACE ending in .gz is read through gzip (bench/profile_1b_ctx1024.trace.json.gz).

--check validates the file instead (the invariants CI relies on) and exits
1 with the first broken one: valid JSON; every task exactly once per step,
as a wait slice followed at once by its task slice; no two slices of one
worker overlap; every slice inside its step's slice; and between a worker's
first wait and last signal, waiting and working add up to the time but for
the queue loop's gaps (at most a quarter of the step).
"""
import argparse
import collections
import gzip
import json
import sys

EPS = 0.0015   # us: the file prints nanoseconds, so rounding is below this


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    meta = d.get("otherData", {})
    steps = collections.defaultdict(lambda: {"tasks": {}, "waits": {}, "slice": None})
    for e in d["traceEvents"]:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        s = steps[a["step"]]
        if e["cat"] == "step":
            s["slice"] = e
        elif e["cat"] == "wait":
            if a["task"] in s["waits"]:
                raise ValueError(f"step {a['step']}: task {a['task']} waits twice")
            s["waits"][a["task"]] = e
        else:
            if a["task"] in s["tasks"]:
                raise ValueError(f"step {a['step']}: task {a['task']} runs twice")
            s["tasks"][a["task"]] = e
    return meta, dict(steps)


def check(meta, steps, ntasks=None, nsteps=None):
    """Returns a list of broken invariants (empty: the trace is sound)."""
    bad = []
    n = meta.get("tasks")
    if ntasks is not None and n != ntasks:
        bad.append(f"the trace says {n} tasks, expected {ntasks}")
    if nsteps is not None and len(steps) != nsteps:
        bad.append(f"{len(steps)} steps in the trace, expected {nsteps}")
    if meta.get("steps") != len(steps):
        bad.append(f"otherData.steps is {meta.get('steps')} but {len(steps)} steps are there")
    for k, s in sorted(steps.items()):
        if s["slice"] is None:
            bad.append(f"step {k}: no step slice")
            continue
        lo = s["slice"]["ts"]
        hi = lo + s["slice"]["dur"]
        if set(s["tasks"]) != set(range(n)) or set(s["waits"]) != set(range(n)):
            missing = sorted(set(range(n)) - set(s["tasks"]))[:5]
            bad.append(f"step {k}: {len(s['tasks'])} task slices and {len(s['waits'])} wait "
                       f"slices for {n} tasks (missing e.g. {missing})")
        per = collections.defaultdict(list)
        for t, e in s["tasks"].items():
            w = s["waits"].get(t)
            if w is None:
                continue
            if abs(w["ts"] + w["dur"] - e["ts"]) > EPS or w["tid"] != e["tid"]:
                bad.append(f"step {k}: task {t}'s wait does not end where the task starts")
            per[e["tid"]] += [(w["ts"], w["ts"] + w["dur"]), (e["ts"], e["ts"] + e["dur"])]
        for tid, iv in per.items():
            iv.sort()
            if iv[0][0] < lo - EPS or iv[-1][1] > hi + EPS:
                bad.append(f"step {k}: worker {tid} has a slice outside the step "
                           f"({iv[0][0]:.3f}..{iv[-1][1]:.3f} not in {lo:.3f}..{hi:.3f})")
            for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
                if b0 < a1 - EPS or a1 < a0 - EPS:
                    bad.append(f"step {k}: worker {tid}: slices overlap at {b0:.3f} us")
                    break
            # from its first wait to its last signal a worker only waits or
            # works: the gaps between a task's signal and the next wait (the
            # queue loop, which on CUDA also reads the task after next's
            # tables: 1-2 us a task, a tenth of a 1.9 ms step of 190 tasks a
            # worker) must stay a small part of the step
            gaps = sum(max(0.0, b0 - a1) for (_, a1), (b0, _) in zip(iv, iv[1:]))
            if gaps > max(0.25 * (hi - lo), 20.0):
                bad.append(f"step {k}: worker {tid}: {gaps:.1f} us between its slices, more "
                           f"than a quarter of the {hi - lo:.1f} us step")
    return bad


def union_length(iv):
    total, end = 0.0, None
    start = None
    for a, b in sorted(iv):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + (end - start if end is not None else 0.0)


def by_op(s):
    rows = collections.defaultdict(lambda: {"n": 0, "busy": 0.0, "wait": 0.0, "bytes": 0,
                                            "iv": []})
    for t, e in s["tasks"].items():
        r = rows[e["cat"]]
        r["n"] += 1
        r["busy"] += e["dur"]
        r["wait"] += s["waits"][t]["dur"] if t in s["waits"] else 0.0
        r["bytes"] += e["args"]["bytes_read"] + e["args"]["bytes_written"]
        r["iv"].append((e["ts"], e["ts"] + e["dur"]))
    for r in rows.values():
        r["wall"] = union_length(r["iv"])
    return sorted(rows.items(), key=lambda kv: -kv[1]["busy"])


def critical_path(s):
    """The chain of tasks that set the step's length, last task first."""
    tasks, waits = s["tasks"], s["waits"]
    by_worker = collections.defaultdict(list)
    for t, e in tasks.items():
        by_worker[e["tid"]].append((e["ts"], t))
    for v in by_worker.values():
        v.sort()
    place = {t: (tid, i) for tid, v in by_worker.items() for i, (_, t) in enumerate(v)}
    cur = max(tasks, key=lambda t: tasks[t]["ts"] + tasks[t]["dur"])
    path = []
    while cur is not None:
        e, w = tasks[cur], waits.get(cur)
        tid, i = place[cur]
        before = by_worker[tid][i - 1][1] if i > 0 else None
        after = [p for p in (w["args"]["after"] if w else []) if p in tasks]
        prod = max(after, key=lambda p: tasks[p]["ts"] + tasks[p]["dur"]) if after else None
        ready_queue = tasks[before]["ts"] + tasks[before]["dur"] if before is not None else None
        prod_end = tasks[prod]["ts"] + tasks[prod]["dur"] if prod is not None else None
        # the task was held by its event if the last signal came after the
        # worker was free (with the worker's own loop in between)
        if prod is not None and (ready_queue is None or prod_end > ready_queue):
            path.append((cur, "event", e["ts"] - prod_end))
            cur = prod
        else:
            path.append((cur, "queue", 0.0))
            cur = before
    return path


def report(meta, steps, k, top):
    s = steps[k]
    step_us = s["slice"]["dur"]
    print(f"step {k} of {meta.get('steps_in_call')} in the call; {meta.get('target')} target, "
          f"{meta.get('workers')} workers, {meta.get('tasks')} tasks; step time {step_us:.1f} us")
    busy_all = sum(e["dur"] for e in s["tasks"].values())
    print(f"\n{'op kind':28s} {'tasks':>6s} {'busy us':>10s} {'share':>6s} {'wait us':>10s} "
          f"{'MB':>9s} {'GB/s/wk':>8s} {'wall us':>9s} {'GB/s':>7s}")
    for cat, r in by_op(s)[:top]:
        mb = r["bytes"] / 1e6
        print(f"{cat[:28]:28s} {r['n']:6d} {r['busy']:10.1f} {100 * r['busy'] / busy_all:5.1f}% "
              f"{r['wait']:10.1f} {mb:9.2f} {r['bytes'] / r['busy'] / 1e3 if r['busy'] else 0:8.2f} "
              f"{r['wall']:9.1f} {r['bytes'] / r['wall'] / 1e3 if r['wall'] else 0:7.1f}")
    path = critical_path(s)
    busy = sum(s["tasks"][t]["dur"] for t, _, _ in path)
    hand = [h for _, kind, h in path if kind == "event"]
    print(f"\ncritical path: {len(path)} tasks, {busy:.1f} us busy of {step_us:.1f} us; "
          f"{len(hand)} event hand-offs, {sum(hand):.1f} us from signal to start "
          f"(mean {sum(hand) / len(hand) if hand else 0:.2f} us)")
    seg = collections.defaultdict(lambda: [0, 0.0])
    for t, _, _ in path:
        seg[s["tasks"][t]["cat"]][0] += 1
        seg[s["tasks"][t]["cat"]][1] += s["tasks"][t]["dur"]
    for cat, (n, us) in sorted(seg.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {cat[:28]:28s} {n:5d} tasks {us:10.1f} us")
    per = collections.defaultdict(list)
    for t, e in s["tasks"].items():
        w = s["waits"].get(t, e)
        per[e["tid"]].append((w["ts"], e["ts"] + e["dur"]))
    gaps = [b0 - a1 for iv in per.values() for (_, a1), (b0, _) in zip(sorted(iv), sorted(iv)[1:])]
    if gaps:
        print(f"\nbetween a task's signal and the next task's wait (the queue loop): mean "
              f"{sum(gaps) / len(gaps):.3f} us, largest {max(gaps):.3f} us over {len(gaps)} gaps")
    util = collections.defaultdict(float)
    for e in s["tasks"].values():
        util[e["tid"]] += e["dur"]
    u = sorted(v / step_us for v in util.values())
    if u:
        print(f"\nworker utilisation (busy / step): mean {100 * sum(u) / len(u):.1f}%, "
              f"min {100 * u[0]:.1f}%, max {100 * u[-1]:.1f}% over {len(u)} workers")


def picture(meta, steps, k, out, top):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = steps[k]
    t0 = s["slice"]["ts"]
    kinds = [c for c, _ in by_op(s)[:top]]
    cmap = plt.get_cmap("tab10" if len(kinds) <= 10 else "tab20")
    colour = {c: cmap(i) for i, c in enumerate(kinds)}
    fig, ax = plt.subplots(figsize=(16, 9))
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in s["tasks"].values():
        rows[e["tid"]][e["cat"] if e["cat"] in colour else "other"].append(
            (e["ts"] - t0, e["dur"]))
    for tid, cats in rows.items():
        for cat, bars in cats.items():
            ax.broken_barh(bars, (tid - 0.4, 0.8), color=colour.get(cat, "0.6"), linewidth=0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[c]) for c in kinds] + \
        [plt.Rectangle((0, 0), 1, 1, color="0.6")]
    ax.legend(handles, kinds + ["other"], loc="upper right", fontsize=8)
    ax.set_xlabel("microseconds since the step began (white: waiting)")
    ax.set_ylabel("worker")
    ax.set_title(f"mkc timeline: step {k}, {meta.get('target')} target, {meta.get('workers')} "
                 f"workers, {s['slice']['dur']:.0f} us")
    ax.set_xlim(0, s["slice"]["dur"])
    ax.set_ylim(-1, (meta.get("workers") or len(rows)))
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def nodes(steps, k, part):
    """Each node whose name holds part, in the order its tiles began: its
    tiles, the span from its first start to its last end (us since the step
    began), the median and largest tile, and the bytes its tiles read over
    that span."""
    s = steps[k]
    t0 = s["slice"]["ts"]
    by = collections.defaultdict(list)
    for e in s["tasks"].values():
        if part in e["name"]:
            by[e["name"]].append(e)
    if not by:
        print(f"\nno node's name holds '{part}'")
        return
    print(f"\nnodes whose name holds '{part}' (us since the step began)")
    print(f"{'node':56} {'tiles':>5} {'from':>8} {'to':>8} {'span':>6} {'median':>7} "
          f"{'max':>7} {'TB/s':>6}")
    for name, es in sorted(by.items(), key=lambda kv: min(e["ts"] for e in kv[1])):
        lo = min(e["ts"] for e in es) - t0
        hi = max(e["ts"] + e["dur"] for e in es) - t0
        d = sorted(e["dur"] for e in es)
        rd = sum(e["args"].get("bytes_read", 0) for e in es)
        print(f"{name[-56:]:56} {len(es):5d} {lo:8.1f} {hi:8.1f} {hi - lo:6.1f} "
              f"{d[len(d) // 2]:7.2f} {d[-1]:7.2f} {rd / 1e6 / (hi - lo) if hi > lo else 0:6.2f}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--step", type=int, help="which step (default: the last in the file)")
    ap.add_argument("--png", help="draw the timeline into this PNG file")
    ap.add_argument("--top", type=int, default=12, help="op kinds listed (default 12)")
    ap.add_argument("--nodes", metavar="PART",
                    help="also each node whose name holds PART (model.layers.5.): its span")
    ap.add_argument("--check", action="store_true", help="validate the trace, report nothing")
    ap.add_argument("--tasks", type=int, help="with --check: the task count expected")
    ap.add_argument("--steps", type=int, help="with --check: the step count expected")
    a = ap.parse_args(argv[1:])
    try:
        meta, steps = load(a.trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{a.trace}: not a trace mkc wrote: {e}", file=sys.stderr)
        return 1
    if a.check:
        bad = check(meta, steps, a.tasks, a.steps)
        for b in bad[:20]:
            print(f"{a.trace}: {b}", file=sys.stderr)
        if not bad:
            print(f"{a.trace}: sound: {len(steps)} steps x {meta.get('tasks')} tasks on "
                  f"{meta.get('workers')} workers")
        return 1 if bad else 0
    if not steps:
        print(f"{a.trace}: no steps in the trace", file=sys.stderr)
        return 1
    k = a.step if a.step is not None else max(steps)
    if k not in steps:
        print(f"{a.trace}: no step {k} (steps {min(steps)}..{max(steps)})", file=sys.stderr)
        return 1
    report(meta, steps, k, a.top)
    if a.nodes:
        nodes(steps, k, a.nodes)
    if a.png:
        picture(meta, steps, k, a.png, a.top)
        print(f"\nwrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
