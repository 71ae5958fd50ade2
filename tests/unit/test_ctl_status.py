#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_ctl_status.py FAILOVERD FAILOVERCTL

`failoverctl status` for monitoring scripts and for watching, against
failoverd on the simulated backend with two pairs:

  - exit 0 while every pair is protected (the reply's "protected", true for
    both ARMED pairs); exit 5 once one is DISARMED, with --json too, and
    the table names it ("not protected: steer");
  - --watch on a pipe prints one snapshot after another, keeps polling
    through a daemon restart (the error on stderr, then tables again) and
    ends with exit 0 on SIGTERM; on a terminal (a pty) it redraws in place
    (cursor home + clear), shows the lost daemon in the frame, and ends
    with exit 0 on SIGINT; --watch --json prints one reply line per poll;
  - bad --interval values, --interval without --watch and --watch on
    another command are usage errors (exit 2) naming the option.
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time

FAILOVERD, FAILOVERCTL = sys.argv[1], sys.argv[2]
EXIT_UNPROTECTED = 5
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def ctl(sock, *args, timeout=30):
    r = subprocess.run([FAILOVERCTL, "-s", sock, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def wait_for(what, cond, secs=15):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    check(False, f"timed out waiting for {what}")
    return False


def states(sock):
    rc, out, _ = ctl(sock, "status", "--json")
    if rc not in (0, EXIT_UNPROTECTED):
        return {}
    return {p["name"]: p for p in json.loads(out)["pairs"]}


def file_text(path):
    with open(path) as f:
        return f.read()


class Daemon:
    def __init__(self, tmp):
        self.cfg = os.path.join(tmp, "failoverd.json")
        self.log = os.path.join(tmp, "daemon.log")
        self.sock = os.path.join(tmp, "control.sock")
        self.proc = None

    def start(self):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([FAILOVERD, "-c", self.cfg, "--backend", "sim"], stdout=log,
                                         stderr=subprocess.STDOUT)
        return wait_for("the control socket", lambda: os.path.exists(self.sock))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


class PtyReader:
    """A child's terminal: everything it wrote, read as it comes."""

    def __init__(self, argv):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.data = b""

    def pump(self):
        while select.select([self.master], [], [], 0)[0]:
            try:
                d = os.read(self.master, 65536)
            except OSError:
                return
            if not d:
                return
            self.data += d
        return

    def frames(self):
        self.pump()
        return self.data.split(b"\x1b[H\x1b[2J")[1:]


def check_exit_codes(sock):
    wait_for("both pairs ARMED",
             lambda: all(p["state"] == "ARMED" for p in states(sock).values()) and len(states(sock)) == 2)
    pairs = states(sock)
    check(all(p.get("protected") is True for p in pairs.values()),
          f"ARMED pairs not \"protected\": {[(n, p.get('protected')) for n, p in pairs.items()]}")
    rc, out, err = ctl(sock, "status")
    check(rc == 0, f"status with every pair ARMED: exit {rc}, want 0: {out}{err}")
    check("not protected" not in out, f"status says a pair is not protected:\n{out}")
    rc, out, err = ctl(sock, "status", "--json")
    check(rc == 0, f"status --json with every pair ARMED: exit {rc}, want 0: {err}")

    rc, out, err = ctl(sock, "disarm", "steer")
    check(rc == 0, f"disarm steer: exit {rc}: {out}{err}")
    wait_for("steer DISARMED", lambda: states(sock).get("steer", {}).get("state") == "DISARMED")
    pairs = states(sock)
    check(pairs["steer"].get("protected") is False and pairs["brake-ctl"].get("protected") is True,
          f"after disarm: protected {[(n, p.get('protected')) for n, p in pairs.items()]}")
    rc, out, err = ctl(sock, "status")
    check(rc == EXIT_UNPROTECTED, f"status with steer DISARMED: exit {rc}, want {EXIT_UNPROTECTED}: {out}{err}")
    check("not protected: steer\n" in out and "brake-ctl\n" not in out.split("not protected:")[-1],
          f"status does not name (only) steer as not protected:\n{out}")
    rc, out, err = ctl(sock, "status", "--json")
    check(rc == EXIT_UNPROTECTED, f"status --json with steer DISARMED: exit {rc}, want {EXIT_UNPROTECTED}")
    check(out.count("\n") == 1 and json.loads(out)["ok"] is True, f"status --json prints more than the reply:\n{out}")

    # A crash drill leaves brake-ctl without a standby: DEGRADED.
    rc, out, err = ctl(sock, "drill", "brake-ctl", "--fault", "crash")
    check(rc == 0, f"drill brake-ctl --fault crash: exit {rc}: {out}{err}")
    wait_for("brake-ctl DEGRADED", lambda: states(sock).get("brake-ctl", {}).get("state") == "DEGRADED")
    check(states(sock)["brake-ctl"].get("protected") is False, "a DEGRADED pair is \"protected\"")
    rc, out, err = ctl(sock, "status")
    check(rc == EXIT_UNPROTECTED and "not protected: brake-ctl, steer\n" in out,
          f"status with brake-ctl DEGRADED, steer DISARMED: exit {rc}:\n{out}{err}")
    print(f"exit codes: 0 while both ARMED, {EXIT_UNPROTECTED} with steer DISARMED (text and --json), "
          f"and with brake-ctl DEGRADED too")


def check_watch(d, tmp):
    sock = d.sock
    out_path, err_path = os.path.join(tmp, "watch.out"), os.path.join(tmp, "watch.err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        piped = subprocess.Popen([FAILOVERCTL, "-s", sock, "status", "--watch", "--interval", "0.2"],
                                 stdout=out, stderr=err)
    jsonl_path = os.path.join(tmp, "watch.jsonl")
    with open(jsonl_path, "w") as out:
        jsonl = subprocess.Popen([FAILOVERCTL, "-s", sock, "status", "--watch", "--json", "--interval", "0.2"],
                                 stdout=out, stderr=subprocess.DEVNULL)
    term = PtyReader([FAILOVERCTL, "-s", sock, "status", "--watch", "--interval", "0.2"])

    def snapshots():
        return file_text(out_path).count("Every 0.2s: failoverctl status")

    wait_for("two snapshots on the pipe", lambda: snapshots() >= 2 or piped.poll() is not None)
    wait_for("two frames on the terminal",
             lambda: len([f for f in term.frames() if b"PAIR" in f]) >= 2 or term.proc.poll() is not None)
    wait_for("two JSON lines", lambda: file_text(jsonl_path).count("\n") >= 2 or jsonl.poll() is not None)
    exited = [p.poll() for p in (piped, term.proc, jsonl)]
    if not check(exited == [None, None, None], f"--watch exited at once (pipe, terminal, --json): {exited}"):
        term.pump()
        print(file_text(err_path), term.data.decode(errors="replace"), file=sys.stderr)
        return

    # The daemon restarts: the watchers say so and carry on.
    d.stop()
    wait_for("the pipe's watcher to report the lost daemon",
             lambda: "cannot connect" in file_text(err_path) and "retrying every 0.2s" in file_text(err_path))
    wait_for("the terminal's frame to show the lost daemon",
             lambda: any(b"cannot connect" in f and b"PAIR" not in f for f in term.frames()))
    check(piped.poll() is None and term.proc.poll() is None and jsonl.poll() is None,
          "a watcher exited when the daemon went away")
    lost_at, lines_at = snapshots(), file_text(jsonl_path).count("\n")
    d.start()
    wait_for("a JSON line after the restart", lambda: file_text(jsonl_path).count("\n") > lines_at)
    wait_for("a table on the pipe after the restart",
             lambda: "PAIR" in file_text(out_path).split("Every 0.2s")[-1] and snapshots() > lost_at)
    wait_for("a table on the terminal after the restart", lambda: b"PAIR" in term.frames()[-1])

    piped.send_signal(signal.SIGTERM)
    jsonl.send_signal(signal.SIGTERM)
    os.killpg(term.proc.pid, signal.SIGINT)
    end = time.time() + 10
    while term.proc.poll() is None and time.time() < end:
        term.pump()  # a full pty would hold the watcher in a write
        time.sleep(0.05)
    rcs = [p.wait(timeout=10) for p in (piped, jsonl, term.proc)]
    check(rcs == [0, 0, 0], f"watchers' exits on SIGTERM (pipe, --json) and SIGINT (terminal): {rcs}, want 0s")

    text = file_text(out_path)
    check("\x1b[" not in text, "--watch on a pipe wrote terminal escapes")
    blocks = text.split("\n\nEvery ")
    check(len(blocks) == snapshots() and snapshots() >= 4,
          f"--watch on a pipe: {snapshots()} snapshots, not each after a blank line:\n{text[:600]}")
    lines = [ln for ln in file_text(jsonl_path).splitlines() if ln]
    ok = True
    for ln in lines:
        try:
            ok = ok and json.loads(ln)["ok"] is True and len(json.loads(ln)["pairs"]) == 2
        except (ValueError, KeyError):
            ok = False
    check(ok and len(lines) >= 3, f"--watch --json: {len(lines)} lines, each a status reply: {ok}")
    term.pump()
    print(f"watch: pipe {snapshots()} snapshots, terminal {len(term.frames())} frames, "
          f"--json {len(lines)} lines, through a daemon restart; exits {rcs}")


def check_usage(sock):
    for bad in ("0", "0.05", "-1", "abc", "1e9", "nan", ""):
        rc, _, err = ctl(sock, "status", "--watch", "--interval", bad)
        check(rc == 2 and "--interval" in err and f"'{bad}'" in err,
              f"--interval {bad!r}: exit {rc}, stderr {err!r}")
    rc, _, err = ctl(sock, "status", "--interval", "1")
    check(rc == 2 and "--interval applies only to status --watch" in err, f"--interval without --watch: {rc} {err!r}")
    rc, _, err = ctl(sock, "events", "--watch")
    check(rc == 2 and "--watch applies only to status" in err, f"events --watch: {rc} {err!r}")
    print("usage: bad intervals and misplaced --watch/--interval refused")


def main():
    tmp = tempfile.mkdtemp(prefix="fo-ctl-status.")
    d = Daemon(tmp)
    pair = {"heartbeat": {"period_ms": 10, "timeout_ms": 500}, "deadline_ms": 100}
    cfg = {"daemon": {"control_socket": d.sock},
           "pairs": [dict(name="brake-ctl", active="brake-a", standby="brake-b", **pair),
                     dict(name="steer", active="steer-a", standby="steer-b", **pair)]}
    with open(d.cfg, "w") as f:
        json.dump(cfg, f)
    try:
        if d.start():
            check_exit_codes(d.sock)
            check_watch(d, tmp)
        check_usage(d.sock)
    finally:
        d.stop()
        if failures:
            print(file_text(d.log)[-3000:], file=sys.stderr)
        subprocess.run(["rm", "-rf", tmp])
    print(f"test_ctl_status: {'FAIL' if failures else 'ok'} ({len(failures)} problem(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
