#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host test of the lab's network service tools (no Xen): fo-netecho must
survive garbage and answer every valid request; fo-netclient's summary must
count what happened: answers per responder, an outage and a TCP reconnect
when the responder is replaced, late replies, cycles with two answerers.

usage: test_netservice.py BUILD_DIR/tests/lab
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/tests/lab"
ECHO = os.path.join(BIN, "fo-netecho")
CLIENT = os.path.join(BIN, "fo-netclient")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_echo(ident, up, tp):
    p = subprocess.Popen([ECHO, "--id", ident, "--udp-port", str(up), "--tcp-port", str(tp)],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert "ready" in line, line
    return p


def udp_ask(up, payload, timeout=0.5):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.sendto(payload, ("127.0.0.1", up))
    try:
        return s.recv(512)
    except socket.timeout:
        return None
    finally:
        s.close()


def run_client(up, tp, out, duration_ms, extra=()):
    return subprocess.Popen([CLIENT, "--name", "t", "--addr", "127.0.0.1", "--udp-port", str(up),
                             "--tcp-port", str(tp), "--duration-ms", str(duration_ms), "--out", out,
                             "--tcp-timeout-ms", "300", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def fake_pair(up, tp, out, answer):
    """The client for 500 ms against a fake pair on UDP port `up`: for each
    request, answer(seq, send, held) replies through send(seq, id) and may
    keep sequences in `held` for later. The client's udp summary."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", up))
    srv.settimeout(0.05)  # wakes at each request, not on a polling sleep
    p = run_client(up, tp, out, 500, ("--no-tcp",))
    held = []
    while p.poll() is None:
        try:
            d, a = srv.recvfrom(512)
        except socket.timeout:
            continue
        answer(int(d.split()[1]), lambda seq, ident: srv.sendto(b"FOR %d %s\n" % (seq, ident), a), held)
    p.communicate(timeout=10)
    srv.close()
    return json.load(open(out))["udp"]


def garbage(up, tp, echo):
    rnd = random.Random(39)
    # UDP: random datagrams, near-misses of the format, an empty one.
    near = [b"", b"FOQ", b"FOQ ", b"FOQ x", b"FOQ 12x", b"FOQ 99999999999999999999999",
            b"FOQ 18446744073709551616", b"foq 1", b"FOR 1 a", b"\x00" * 600]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for d in near + [bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 700))) for _ in range(300)]:
        s.sendto(d, ("127.0.0.1", up))
    s.close()
    # (The flood may overrun the socket's buffer: ask until it has drained.)
    ans = None
    for _ in range(10):
        ans = udp_ask(up, b"FOQ 18446744073709551615 tail")
        if ans:
            break
    check(ans == b"FOR 18446744073709551615 g1\n",
          "udp: the largest sequence is answered after 310 garbage datagrams")
    # TCP: garbage lines get FOE, a valid line after them FOR; an overlong
    # line closes that connection only; binary noise; many connections.
    c = socket.create_connection(("127.0.0.1", tp))
    c.sendall(b"hello\nFOQ 5\r\nFOQ 6 extra words\n")
    c.settimeout(1)
    got = b""
    while got.count(b"\n") < 3:
        got += c.recv(512)
    check(got == b"FOE g1 bad-request\nFOR 5 g1\nFOR 6 g1\n", f"tcp: a garbage line refused, requests answered ({got!r})")
    c.sendall(b"A" * 5000)
    c.settimeout(2)
    try:
        closed = c.recv(512) == b""
    except ConnectionResetError:
        closed = True
    check(closed, "tcp: an overlong line closes its connection")
    c.close()
    conns = [socket.create_connection(("127.0.0.1", tp)) for _ in range(40)]
    for k in conns:
        try:
            k.sendall(bytes(rnd.getrandbits(8) for _ in range(300)))
        except OSError:
            pass
    for k in conns:
        k.close()
    c = socket.create_connection(("127.0.0.1", tp))
    c.settimeout(2)
    c.sendall(b"FOQ 77\n")
    check(c.recv(64) == b"FOR 77 g1\n", "tcp: answers after 40 garbage connections")
    c.close()
    check(echo.poll() is None, "fo-netecho survived the garbage")


def main():
    random.seed(39)
    tmp = tempfile.mkdtemp(prefix="fo-netservice.")
    up, tp = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)

    echo = start_echo("g1", up, tp)
    garbage(up, tp, echo)

    # A steady run: everything answered by g1, no outage.
    out = os.path.join(tmp, "steady.json")
    p = run_client(up, tp, out, 600)
    line, _ = p.communicate(timeout=10)
    s = json.load(open(out))
    u = s["udp"]
    check(p.returncode == 0 and "fo-netclient t:" in line, "client: exit 0 and a summary line")
    check(u["sent"] >= 40 and u["answered"] == u["sent"] and u["by_id"] == {"g1": u["sent"]},
          f"steady: {u['answered']}/{u['sent']} answered, all by g1")
    check(u["n_outages"] == 0 and u["longest_outage_ms"] == 0 and u["two_answerers"] == 0 and u["double_answered"] == 0,
          "steady: no outage, no two answerers, nothing answered twice")
    # The median within a cycle; the maximum is the host's scheduler's.
    check(u["rtt_p50_ms"] is not None and 0 < u["rtt_p50_ms"] < 10 and u["rtt_p50_ms"] <= u["rtt_max_ms"],
          f"steady: rtt p50 {u['rtt_p50_ms']} ms, max {u['rtt_max_ms']} ms")
    check(s["tcp"]["answered"] >= 30 and s["tcp"]["n_reconnects"] == 0, f"steady: tcp {s['tcp']['answered']} answers, no reconnect")

    # The responder replaced by another with a new id, 300 ms apart: one
    # outage of about 30 cycles, the responder change, one TCP reconnect.
    out = os.path.join(tmp, "switch.json")
    p = run_client(up, tp, out, 1500)
    time.sleep(0.5)
    echo.send_signal(signal.SIGTERM)
    echo.wait()
    time.sleep(0.3)
    echo = start_echo("g2", up, tp)
    p.communicate(timeout=10)
    s = json.load(open(out))
    u = s["udp"]
    ids = [r["id"] for r in u["responders"]]
    check(ids == ["g1", "g2"], f"switch: responders {ids}")
    check(u["n_outages"] == 1 and 20 <= u["longest_outage_cycles"] <= 60 and 200 <= u["longest_outage_ms"] <= 600,
          f"switch: one outage, {u['longest_outage_cycles']} cycles, {u['longest_outage_ms']} ms")
    check(300 <= u["longest_silence_ms"] <= 700 and u["longest_silence_ms"] >= u["longest_outage_ms"] - 20,
          f"switch: longest silence {u['longest_silence_ms']} ms")
    o = u["outages"][0]
    check(o["answered_seq"] - o["first_seq"] == o["cycles"] and not o["open"], "switch: the outage's bounds")
    rc = [r for r in s["tcp"]["reconnects"] if not r["initial"]]
    check(len(rc) == 1 and rc[0]["error_to_answer_ms"] is not None and 200 <= rc[0]["error_to_answer_ms"] <= 800,
          f"switch: one tcp reconnect, back after {rc[0]['error_to_answer_ms'] if rc else None} ms")
    check(s["tcp"]["by_id"].get("g2", 0) > 0, "switch: tcp answered by g2 after the reconnect")
    check(rc and rc[0]["last_answer_to_answer_ms"] >= rc[0]["error_to_answer_ms"], "switch: the tcp outage counts from the last answer")
    echo.send_signal(signal.SIGTERM)
    echo.wait()

    # A fake pair answering every request twice (ids x and y), the second
    # answer of every fifth request one cycle late.
    def twice(seq, send, held):
        send(seq, b"x")
        for hs in held:
            send(hs, b"y")
        held.clear()
        if seq % 5 == 0:
            held.append(seq)
        else:
            send(seq, b"y")
    u = fake_pair(up, tp, os.path.join(tmp, "two.json"), twice)
    check(u["two_answerers"] >= u["answered"] - 2 and u["answered"] >= 30,
          f"two: {u['two_answerers']} of {u['answered']} cycles with two answerers")
    # Counting the held second answers as late would make every fifth
    # cycle late (20 %); a first answer can still be late on a loaded host
    # (this server is a Python process), so the bound is 5 %, not 0.
    check(u["late"] <= u["answered"] // 20,
          f"two: a first answer on time is not late, the held second answers are not counted ({u['late']} late of {u['answered']})")
    check(u["by_id"]["x"] >= 30 and u["by_id"]["y"] >= 30, f"two: both ids counted {u['by_id']}")
    check(u["double_answered"] >= u["answered"] - 2,
          f"two: every request answered by both is double answered ({u['double_answered']} of {u['answered']})")

    # Two members taking turns, each request answered once: x answers the
    # even ones at once, y the odd ones only when the next request came
    # (a member's last reply, sent before its pause, arriving in the next
    # member's first cycle). Every window holds both ids; no request is
    # answered twice.
    def turns(seq, send, held):
        for hs in held:
            send(hs, b"y")
        held.clear()
        if seq % 2 == 0:
            send(seq, b"x")
        else:
            held.append(seq)
    u = fake_pair(up, tp, os.path.join(tmp, "turns.json"), turns)
    check(u["answered"] >= 30 and u["two_answerers"] >= u["answered"] // 3 and u["double_answered"] == 0,
          f"turns: {u['two_answerers']} cycles with two answerers, {u['double_answered']} requests answered twice "
          f"(of {u['answered']})")

    # Nobody answers: one open outage over the whole run.
    out = os.path.join(tmp, "dark.json")
    p = run_client(up, tp, out, 300, ("--no-tcp",))
    p.communicate(timeout=10)
    u = json.load(open(out))["udp"]
    check(u["answered"] == 0 and u["n_outages"] == 1 and u["outages"][0]["open"] and u["outages"][0]["answered_seq"] is None,
          "dark: one open outage, nothing answered")

    # Bad arguments are named.
    r = subprocess.run([CLIENT, "--period-ms", "0"], capture_output=True, text=True)
    check(r.returncode == 2 and "--period-ms" in r.stderr, "client: a bad --period-ms is named")
    r = subprocess.run([ECHO, "--id", "bad id!"], capture_output=True, text=True)
    check(r.returncode == 2 and "--id" in r.stderr, "echo: a bad --id is named")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
