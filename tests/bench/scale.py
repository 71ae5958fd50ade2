#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scale.py - N pairs on one host: one failoverd, N pairs, faults injected
through the control socket, everything measured from the daemon's own
events (phase timestamps, CLOCK_MONOTONIC) and /proc/PID.

    scale.py --failoverd BIN [--backend sim|xen] [--config-extra JSON]
             [--n 1,2,4,...] [--rounds R] [--idle-secs S] --out DIR
    scale.py --failoverd BIN --smoke --n 64     (correctness only; exit 1 on a problem)

Per N (see tests/bench/README.md, "Scale"):
  a. single: one pair faults while the others are healthy (R rounds, the
     pair rotating): detected -> standby running and fault -> standby running;
  b. all: every pair faults at once (N drill requests on N connections, sent
     back to back before any reply is read): each pair's standby-running time
     after the first fault, in order, and the last one;
  c. second: pair A faults, pair B right after: B's detected -> running minus
     the single-pair p50 (the delay A's switch and after-work cost B), against
     A's own switch;
  d. idle CPU: the daemon's CPU time per second (all its threads' schedstat)
     with every pair ARMED and heartbeating;
  e. memory: VmRSS, VmLck, threads, and smaps' Rss/Locked by mapping kind.

The same code drives the real-Xen lab: --backend xen with --config-extra
naming the lab's domains (the member names are PAIR-a / PAIR-b unless the
extra config's "pairs" replace them). Drills are "heartbeat-loss" by default
(--fault): the agent stops beating and the daemon's own deadline detects it.
A drilled pair is not drilled again: its failed member stays failed (the
simulator's agent stays stopped), so once every pair of a daemon has been
drilled the next round starts a fresh daemon.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = ("fault", "detected", "decided", "pause_issued", "pause_done", "unpause_issued", "unpause_done",
          "first_heartbeat")


class Daemon:
    def __init__(self, binary, backend, n, tmp, extra, grace_ms=None, timeout_ms=50):
        self.tmp, self.n = tmp, n
        self.sock = os.path.join(tmp, "control.sock")
        self.log = os.path.join(tmp, "daemon.log")
        self.names = [f"p{i:03d}" for i in range(n)]
        pairs = [{"name": p, "active": f"{p}-a", "standby": f"{p}-b",
                  "heartbeat": {"period_ms": 10, "timeout_ms": timeout_ms}, "deadline_ms": 100} for p in self.names]
        if grace_ms:
            for p in pairs:
                p["heartbeat"]["grace_ms"] = grace_ms
        cfg = {"daemon": {"control_socket": self.sock, "state_file": os.path.join(tmp, "state.json")},
               "pairs": pairs}
        for k, v in (extra or {}).items():
            cfg[k] = {**cfg.get(k, {}), **v} if isinstance(v, dict) else v
        if extra and "pairs" in extra:
            self.names = [p["name"] for p in cfg["pairs"]]
        self.cfg = os.path.join(tmp, "failoverd.json")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f)
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([binary, "-c", self.cfg, "--backend", backend], stdout=log,
                                         stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def request(self, req, timeout=60):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        try:
            s.connect(self.sock)
            s.sendall((json.dumps(req) + "\n").encode())
            return read_reply(s)
        finally:
            s.close()

    def status(self):
        return {p["name"]: p for p in self.request({"cmd": "status"})["pairs"]}

    def wait_armed(self, names=None, secs=60):
        names = names or self.names
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"failoverd exited {self.proc.returncode}: {tail(self.log)}")
            if os.path.exists(self.sock):
                try:
                    st = self.status()
                    if all(st.get(n, {}).get("state") == "ARMED" for n in names):
                        return st
                except (OSError, ValueError, KeyError):
                    pass
            time.sleep(0.02)
        try:
            st = self.status()
        except (OSError, ValueError, KeyError) as e:
            st = {"?": {"state": f"no status: {e}"}}
        late = {n: st.get(n, {}).get("state") for n in names if st.get(n, {}).get("state") != "ARMED"}
        raise RuntimeError(f"pairs not ARMED within {secs}s: {list(late.items())[:8]}: {tail(self.log)}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def read_reply(s):
    buf = b""
    while b"\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise OSError("connection closed before the reply")
        buf += d
    return json.loads(buf.split(b"\n", 1)[0])


def tail(path, n=2000):
    try:
        with open(path) as f:
            return f.read()[-n:]
    except OSError:
        return ""


def event_abs(ev):
    """The event's phases as absolute CLOCK_MONOTONIC us (time_ns is the
    detection time; phases_us count from the fault)."""
    ph = ev["phases_us"]
    fault_us = ev["time_ns"] / 1000 - ph["detected"]
    out = {k: fault_us + v for k, v in ph.items() if v is not None and v >= 0}
    out["fault"] = fault_us
    return out


def switch_sample(ev):
    ph = ev["phases_us"]
    return {"pair": ev["pair"], "result": ev["result"], "from": ev["from"], "to": ev["to"],
            "detected_to_running_us": ph["unpause_done"] - ph["detected"],
            "fault_to_running_us": ph["unpause_done"],
            "fenced": ph.get("pause_done", -1) >= 0 and ph["pause_done"] <= ph["unpause_issued"],
            "abs_us": event_abs(ev), "phases_us": ph}


def drill_all(d, names, fault, secs=60):
    """Every pair's drill as close together as the control socket allows.
    The socket takes 32 clients, so the requests do not wait for their
    (deferred) replies: each goes on a connection of its own, closed once a
    few newer ones are open (the daemon, at SCHED_FIFO, has read it by
    then; the drill runs on without its requester). The events come from a
    follower (`events --follow`) opened first, so none is lost to the
    ring. Returns (events by pair in `names` order, send us)."""
    follower = socket.socket(socket.AF_UNIX)
    follower.settimeout(secs)
    follower.connect(d.sock)
    follower.sendall(b'{"cmd":"events","follow":true}\n')
    buf = b""
    while b"\n" not in buf:
        buf += follower.recv(1 << 20)
    buf = buf.split(b"\n", 1)[1]  # the ring as it was: not this round's
    open_conns = []
    sent_ns = time.monotonic_ns()
    for n in names:
        s = socket.socket(socket.AF_UNIX)
        s.connect(d.sock)
        s.sendall((json.dumps({"cmd": "drill", "pair": n, "fault": fault}) + "\n").encode())
        open_conns.append(s)
        if len(open_conns) > 16:
            open_conns.pop(0).close()
    sent_done_ns = time.monotonic_ns()
    for s in open_conns:
        s.close()
    got, want, seen = {}, set(names), {}
    end = time.monotonic() + secs
    try:
        while want - set(got) and time.monotonic() < end:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                ev = json.loads(line).get("event", {})
                if ev.get("kind") in ("drill", "switchover") and ev.get("pair") in want:
                    got.setdefault(ev["pair"], ev)
                    seen[ev["pair"]] = seen.get(ev["pair"], 0) + 1
            if want - set(got):
                d_ = follower.recv(1 << 20)
                if not d_:
                    print("follower: EOF after", len(got), "events; last bytes:", buf[-300:], file=sys.stderr)
                    break
                buf += d_
    except socket.timeout:
        pass
    follower.close()
    missing = sorted(want - set(got))
    if missing:
        raise RuntimeError(f"no switch event within {secs}s for {len(missing)} pair(s): {missing[:8]}: "
                           f"{tail(d.log)}")
    return [{"ok": True, "event": got[n], "switch_events": seen[n]} for n in names], (sent_done_ns - sent_ns) / 1000


def cpu_ns(pid):
    """Every thread's time on a CPU (schedstat's first field, ns), by thread."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                out[f"{f.read().strip()}/{t}"] = ns
        except OSError:
            pass
    return out


def read_smaps(pid):
    """Every mapping of /proc/PID/smaps: lo, hi, perms, path, Rss and Locked (kB)."""
    maps = []
    cur = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                cur = {"lo": lo, "hi": hi, "perms": parts[1], "path": parts[5] if len(parts) > 5 else "",
                       "Rss": 0, "Locked": 0}
                maps.append(cur)
            elif cur and parts[0] in ("Rss:", "Locked:"):
                cur[parts[0][:-1]] = int(parts[1])
    return maps


def classify_smaps(pid, exe):
    return classify_maps(read_smaps(pid), exe)


def classify_maps(maps, exe):
    """Rss and Locked (kB) by mapping kind. Thread stacks: an anonymous rw
    mapping right after an anonymous PROT_NONE guard; malloc arenas: an
    anonymous rw mapping followed by the PROT_NONE rest of its 64 MiB heap.
    maps: read_smaps()'s list (the lab's adapter, scale_lab.py, makes the
    same from dom0's lines)."""
    kinds = {}
    for i, m in enumerate(maps):
        prev = maps[i - 1] if i else None
        nxt = maps[i + 1] if i + 1 < len(maps) else None
        anon = m["path"] == ""
        if m["path"] == "[stack]":
            k = "main stack"
        elif m["path"] == "[heap]":
            k = "heap (brk)"
        elif m["path"] in ("[vdso]", "[vvar]", "[vsyscall]"):
            k = "vdso/vvar"
        elif m["path"] == exe or os.path.basename(m["path"]) == "failoverd":
            k = "failoverd binary (text, data)"
        elif ".so" in m["path"]:
            k = "shared libraries"
        elif m["path"].startswith("/dev/"):
            k = "device mappings (" + os.path.dirname(m["path"]) + "/*)"
        elif anon and m["perms"].startswith("---"):
            k = "guard / reserved (PROT_NONE)"
        elif anon and prev and prev["path"] == "" and prev["perms"].startswith("---") and prev["hi"] == m["lo"] \
                and (prev["hi"] - prev["lo"]) <= 64 * 1024:
            k = "thread stacks"
        elif anon and nxt and nxt["path"] == "" and nxt["perms"].startswith("---") and nxt["lo"] == m["hi"] \
                and (nxt["hi"] - m["lo"]) in (64 << 20, 128 << 20):
            k = "malloc arenas"
        elif anon:
            k = "anonymous (preallocations, large mallocs, bss overflow)"
        else:
            k = "other files"
        e = kinds.setdefault(k, {"mappings": 0, "size_kB": 0, "Rss_kB": 0, "Locked_kB": 0})
        e["mappings"] += 1
        e["size_kB"] += (m["hi"] - m["lo"]) // 1024
        e["Rss_kB"] += m["Rss"]
        e["Locked_kB"] += m["Locked"]
    return kinds


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmLck", "VmHWM", "VmSize", "VmData", "VmStk", "Threads"):
                out[k] = int(v.split()[0])
    return out


class Fleet:
    """Hands out pairs that have not been drilled yet, starting a fresh
    daemon (in a fresh directory) when every pair of the current one has
    been. A drilled member stays failed: the simulator's agent stays
    stopped, as a real guest would until it is repaired."""

    def __init__(self, args, n, tmp):
        self.args, self.n, self.tmp = args, n, tmp
        self.d, self.fresh, self.starts = None, [], 0

    def daemon(self):
        if self.d is None:
            self.starts += 1
            sub = os.path.join(self.tmp, f"d{self.starts}")
            os.makedirs(sub)
            self.d = Daemon(self.args.failoverd, self.args.backend, self.n, sub, self.args.config_extra,
                            timeout_ms=self.args.timeout_ms)
            self.d.wait_armed(secs=60)
            self.fresh = list(self.d.names)
        return self.d

    def take(self, k):
        if self.d is not None and len(self.fresh) < k:
            self.stop()
        d = self.daemon()
        got, self.fresh = self.fresh[:k], self.fresh[k:]
        return d, got

    def stop(self):
        if self.d is not None:
            self.d.stop()
            self.log_tail = tail(self.d.log, 1500)
        self.d = None


def measure_n(args, n, tmp):
    fleet = Fleet(args, n, tmp)
    res = {"n": n}
    try:
        d = fleet.daemon()
        # d. idle CPU, e. memory: everything ARMED, heartbeating, nothing else.
        time.sleep(0.5)
        c0, t0 = cpu_ns(d.pid), time.monotonic_ns()
        time.sleep(args.idle_secs)
        c1, t1 = cpu_ns(d.pid), time.monotonic_ns()
        secs = (t1 - t0) / 1e9
        res["idle"] = {"secs": secs,
                       "cpu_ms_per_s": sum(c1.get(k, 0) - c0.get(k, 0) for k in c1) / 1e6 / secs,
                       "by_thread_ms_per_s": {k: (c1[k] - c0.get(k, 0)) / 1e6 / secs for k in sorted(c1)}}
        res["memory"] = {"status_kB": proc_status(d.pid), "threads": sorted(c1),
                         "smaps": classify_smaps(d.pid, os.path.realpath(args.failoverd))}

        # a. one pair at a time, the others healthy.
        single = []
        for r in range(args.rounds):
            d, (name,) = fleet.take(1)
            ev = d.request({"cmd": "drill", "pair": name, "fault": args.fault}, timeout=60)
            if not ev.get("ok"):
                raise RuntimeError(f"drill {name}: {ev}")
            single.append(switch_sample(ev["event"]))
        res["single"] = single

        # c. A faults, B right after it (A's request sent first).
        second = []
        if n >= 2:
            for r in range(args.rounds):
                d, (a, b) = fleet.take(2)
                replies, _ = drill_all(d, [a, b], args.fault)
                if not all(x.get("ok") for x in replies):
                    raise RuntimeError(f"drills {a},{b}: {replies}")
                sa, sb = (switch_sample(x["event"]) for x in replies)
                second.append({"a": sa, "b": sb})
        res["second"] = second

        # b. every pair at once, on a daemon of its own.
        fleet.stop()
        d, names = fleet.take(n)
        replies, send_us = drill_all(d, names, args.fault)
        bad = [x for x in replies if not x.get("ok")]
        if bad:
            raise RuntimeError(f"{len(bad)} drill(s) failed: {bad[:3]}")
        res["all"] = {"send_us": send_us, "samples": [switch_sample(x["event"]) for x in replies],
                      "problems": check_after_all(d, names, replies, late_ok=True),
                      "late_first_heartbeat": sorted(x["event"]["pair"] for x in replies
                                                     if x["event"]["result"] == "degraded"),
                      "status_kB_after": proc_status(d.pid)}
        res["daemon_starts"] = fleet.starts
    finally:
        fleet.stop()
    return res


def check_after_all(d, names, replies, late_ok=False):
    """The correctness the smoke test asserts: every pair switched exactly
    once, fenced (pause confirmed before the unpause), never both members
    running. Returns the problems found (empty = none). late_ok: a switch
    whose new active's first heartbeat came after its grace (result
    "degraded": the loop was busy with the other pairs) still counts as
    switched; the benchmark reports those apart."""
    problems = []
    got = {x["event"]["pair"]: x["event"] for x in replies if x.get("ok")}
    for n in names:
        ev = got.get(n)
        if not ev:
            problems.append(f"{n}: no drill event")
            continue
        ph = ev["phases_us"]
        if ev["kind"] != "drill" or ev["result"] not in (("ok", "degraded") if late_ok else ("ok",)):
            problems.append(f"{n}: event kind {ev['kind']} result {ev['result']}")
        if not (ph.get("pause_done", -1) >= 0 and ph["pause_done"] <= ph.get("unpause_issued", -1)):
            problems.append(f"{n}: not fenced: pause_done {ph.get('pause_done')} unpause_issued "
                            f"{ph.get('unpause_issued')}")
    st = d.status()
    for n in names:
        p = st.get(n, {})
        if p.get("switches") != 1:
            problems.append(f"{n}: {p.get('switches')} switches, want 1")
        if p.get("active_state") not in ("running", "blocked") or p.get("standby_state") in ("running", "blocked"):
            problems.append(f"{n}: active {p.get('active')} {p.get('active_state')}, standby "
                            f"{p.get('standby')} {p.get('standby_state')}")
        if n in got and p.get("active") != got[n]["to"]:
            problems.append(f"{n}: active {p.get('active')}, the drill switched to {got[n]['to']}")
    for x in replies:
        if x.get("switch_events", 1) != 1:
            problems.append(f"{x['event']['pair']}: {x['switch_events']} switch events, want 1")
    return problems


def check_reload_stack(d, secs=10):
    """A reload (SIGHUP) with every pair configured reads the new config
    without growing the loop's stack past its prefaulted part (VmStk, the
    main thread's stack, is the loop's): no page faults on the loop."""
    before = proc_status(d.pid)["VmStk"]
    os.kill(d.pid, signal.SIGHUP)
    end = time.monotonic() + secs
    while "failoverd: reloaded " not in tail(d.log, 1 << 20):
        if time.monotonic() > end:
            return [f"no \"reloaded\" line in the log within {secs}s of SIGHUP"]
        time.sleep(0.05)
    after = proc_status(d.pid)["VmStk"]
    d.wait_armed(secs=secs)
    return [] if after <= before else [f"the loop's stack grew on reload: VmStk {before} -> {after} kB"]


def smoke(args):
    n = args.n[0]
    tmp = tempfile.mkdtemp(prefix="fo-scale-smoke.")
    # A long timeout and grace: the smoke asserts the switches, not how soon
    # a loop on a loaded machine hears each beat (a 50 ms timeout there
    # fails pairs over before the drills).
    d = Daemon(args.failoverd, args.backend, n, tmp, args.config_extra, grace_ms=5000, timeout_ms=1000)
    try:
        st = d.wait_armed(secs=20)
        # The config's size does not depend on N; with many pairs the
        # reload's per-pair lines can overflow the log queue, and the
        # "reloaded" line this waits for would be dropped.
        problems = check_reload_stack(d) if n <= 64 else []
        replies, send_us = drill_all(d, d.names, args.fault, secs=15)
        problems += check_after_all(d, d.names, replies)
    except RuntimeError as e:
        problems, send_us = [str(e)], 0
    finally:
        d.stop()
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    if problems:
        print(tail(d.log), file=sys.stderr)
    else:
        subprocess.run(["rm", "-rf", tmp])
    print(f"scale smoke: {n} pairs drilled at once ({send_us:.0f} us to send): ok: every pair switched "
          f"once, fenced, one member running" if not problems else f"scale smoke: {len(problems)} problem(s)")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--failoverd", required=True)
    ap.add_argument("--backend", default="sim", choices=("sim", "xen"))
    ap.add_argument("--n", default="1,2,4,8,16,32,64,128,256",
                    type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--idle-secs", type=float, default=3.0)
    ap.add_argument("--fault", default="heartbeat-loss")
    ap.add_argument("--timeout-ms", type=int, default=500,
                    help="every pair's heartbeat.timeout_ms (period 10 ms, grace = timeout); 500: see README")
    ap.add_argument("--config-extra", type=json.loads, default=None,
                    help="JSON merged into the generated config (top-level keys; objects merged)")
    ap.add_argument("--out", help="directory for the samples file")
    ap.add_argument("--samples-name", default="samples.json")
    ap.add_argument("--tmp-dir", help="where each daemon's directory (socket, state file) goes; default $TMPDIR")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if any(n < 1 for n in args.n):
        ap.error("--n: every N must be >= 1")
    if args.smoke:
        return smoke(args)
    if not args.out:
        ap.error("--out is required (except with --smoke)")
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for n in args.n:
        tmp = tempfile.mkdtemp(prefix=f"fo-scale-{n}.", dir=args.tmp_dir)
        t = time.monotonic()
        runs.append(measure_n(args, n, tmp))
        print(f"N={n}: done in {time.monotonic() - t:.1f}s", file=sys.stderr)
        subprocess.run(["rm", "-rf", tmp])
    with open(os.path.join(args.out, args.samples_name), "w") as f:
        json.dump({"backend": args.backend, "fault": args.fault, "rounds": args.rounds, "timeout_ms": args.timeout_ms,
                   "idle_secs": args.idle_secs, "tmp_dir": args.tmp_dir or tempfile.gettempdir(),
                   "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
