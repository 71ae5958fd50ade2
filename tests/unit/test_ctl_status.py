#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_ctl_status.py FAILOVERD FAILOVERCTL

`failoverctl status` for monitoring scripts, against failoverd on the
simulated backend with two pairs: exit 0 while every pair is protected (the
reply's "protected", true for both ARMED pairs); exit 5 once one is
DISARMED, with --json too, and the table names it ("not protected: steer");
exit 5 still, naming both, once the other is DEGRADED after a crash drill.
"""
import json
import os
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
    finally:
        d.stop()
        if failures:
            print(file_text(d.log)[-3000:], file=sys.stderr)
        subprocess.run(["rm", "-rf", tmp])
    print(f"test_ctl_status: {'FAIL' if failures else 'ok'} ({len(failures)} problem(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
