#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""two-host.py - run one or two emulated Xen hosts of the two-host lab
(two-host.sh prepares their disks) and watch both serial consoles.

  two-host.py --run-dir DIR --xen XEN --vmlinuz K --initrd I --scenario S
              --timeout S --hosts 1|2 --log-dir DIR [--token MS] [-v]

Host a is node 1, host b node 2. They share:
  - a network, QEMU's own (-netdev dgram, unicast on 127.0.0.1: no host
    network, no bridge, no root needed for it);
  - DIR/sbd.img, a raw disk attached to both (share-rw=on), by id
    /dev/disk/by-id/virtio-fo-sbd in dom0: sbd's poison-pill mailbox.
Each has an i6300esb watchdog (QEMU powers the host off when it fires).

Every console line is written raw to LOG_DIR/S-a.log (the marker parsers
read those) and, prefixed with the host's seconds since the start, to
LOG_DIR/S-a.tlog: the two consoles on one clock.

Requests from a console (the scenario prints them):
  @@FO-TW-KILL a        SIGKILL host a's QEMU (a host lost at once: no
                        shutdown, no last packet); the time goes in both logs
  @@FO-TW-EXPECT-RESET  this host's watchdog is armed and no longer fed: it
                        must end by the watchdog (QEMU exits), never by the
                        scenario's own poweroff
The runner's own lines are `@@FO-TW-HOST {json}`. Exit 0 when every
expectation held; results.py judges the scenario's verdict afterwards.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

PORT_BASE = 47400
MAC = "52:54:00:40:00:0{}"


def qemu_argv(args, host, node):
    run = args.run_dir
    other = 2 if node == 1 else 1
    xen_args = "dom0_mem=1024M,max:1024M console=com1 com1=115200,8n1 noreboot dom0_max_vcpus=1"
    dom0_args = (f"console=hvc0 root=/dev/vda rw quiet fo.scenario={args.scenario} "
                 f"fo.timeout={args.dom0_timeout} fo.node={node} fo.hosts={args.hosts} "
                 f"fo.token={args.token}")
    return [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "qemu64,+svm",
        # One vCPU each: the two emulators then need one host core each;
        # with two vCPUs each (four TCG threads on two cores) a Debian dom0
        # took 108 s to boot instead of ~26 s alone, and Pacemaker's fencer
        # timed out running fence_sbd for its metadata.
        "-m", "1536", "-smp", "1", "-nographic", "-no-reboot",
        "-drive", f"file={run}/root-{host}.qcow2,if=virtio,format=qcow2",
        "-drive", f"file={run}/lab.img,if=virtio,format=raw,readonly=on",
        # The shared disk: writethrough, so every write has reached the
        # host's file (one page cache for both QEMUs) before the guest
        # sees it complete.
        "-drive", f"file={run}/sbd.img,if=none,id=sbd,format=raw,cache=writethrough",
        # A PCI slot after the if=virtio disks': dom0 names disks in slot
        # order, and root=/dev/vda, /lab=/dev/vdb must stay the first two.
        "-device", "virtio-blk-pci,drive=sbd,share-rw=on,serial=fo-sbd,addr=0x10",
        "-netdev", (f"dgram,id=cl,local.type=inet,local.host=127.0.0.1,local.port={PORT_BASE + node},"
                    f"remote.type=inet,remote.host=127.0.0.1,remote.port={PORT_BASE + other}"),
        "-device", f"virtio-net-pci,netdev=cl,mac={MAC.format(node)}",
        "-device", "i6300esb", "-action", "watchdog=poweroff",
        "-kernel", args.xen, "-append", xen_args,
        "-initrd", f"{args.vmlinuz} {dom0_args},{args.initrd}",
    ]


class Host:
    def __init__(self, name, node, argv, log_dir, scenario, verbose):
        self.name, self.node, self.argv = name, node, argv
        self.raw = open(os.path.join(log_dir, f"{scenario}-{name}.log"), "w", errors="replace")
        self.tlog = open(os.path.join(log_dir, f"{scenario}-{name}.tlog"), "w", errors="replace")
        self.verbose = verbose
        self.proc = None
        self.killed_at = None
        self.exited_at = None
        self.expect_reset_at = None
        self.powered_off = False  # the scenario's runner reached its poweroff
        self.lock = threading.Lock()

    def note(self, t, event, **kw):
        line = "@@FO-TW-HOST " + json.dumps(dict(event=event, host=self.name, t_s=round(t, 3), **kw))
        self.write(t, line)

    def write(self, t, line):
        with self.lock:
            self.raw.write(line + "\n")
            self.raw.flush()
            self.tlog.write(f"[{t:9.3f}] {line}\n")
            self.tlog.flush()
        if self.verbose:
            print(f"{self.name} [{t:9.3f}] {line}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--run-dir", "--xen", "--vmlinuz", "--initrd", "--scenario", "--log-dir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--timeout", type=int, required=True)
    ap.add_argument("--dom0-timeout", type=int, required=True)
    ap.add_argument("--hosts", type=int, choices=(1, 2), default=2)
    ap.add_argument("--token", type=int, default=10000)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    names = ["a", "b"][: args.hosts]
    hosts = {n: Host(n, i + 1, qemu_argv(args, n, i + 1), args.log_dir, args.scenario, args.verbose)
             for i, n in enumerate(names)}
    t0 = time.monotonic()

    def now():
        return time.monotonic() - t0

    def kill(target, by):
        h = hosts.get(target)
        if h is None or h.proc.poll() is not None:
            by.note(now(), "kill-refused", target=target, why="no such host running")
            return
        h.proc.send_signal(signal.SIGKILL)
        t = now()
        h.killed_at = t
        for x in hosts.values():
            x.note(t, "killed", target=target, by=by.name)

    def reader(h):
        for raw in h.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            t = now()
            h.write(t, line)
            if "@@FO-TW-KILL " in line:
                kill(line.split("@@FO-TW-KILL ", 1)[1].split()[0], h)
            elif "@@FO-TW-EXPECT-RESET" in line:
                h.expect_reset_at = t
            elif "== dom0 done" in line:
                h.powered_off = True

    # The emulators ahead of the host's other work, as lib/boot.sh does for
    # one (FO_LAB_NICE): a build beside them would freeze both machines
    # while their clocks run on, and corosync's token with them.
    nice = int(os.environ.get("FO_LAB_NICE", "-15"))

    def raise_priority():
        if nice != 0 and os.geteuid() == 0:
            os.nice(nice)

    threads = []
    for h in hosts.values():
        h.proc = subprocess.Popen(h.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, preexec_fn=raise_priority)
        h.note(now(), "started", pid=h.proc.pid)
        th = threading.Thread(target=reader, args=(h,), daemon=True)
        th.start()
        threads.append(th)

    timed_out = False
    while any(h.proc.poll() is None for h in hosts.values()):
        if now() > args.timeout:
            timed_out = True
            for h in hosts.values():
                if h.proc.poll() is None:
                    h.proc.kill()
                    h.note(now(), "timeout-kill", timeout_s=args.timeout)
            break
        for h in hosts.values():
            if h.exited_at is None and h.proc.poll() is not None:
                h.exited_at = now()
        # The judging host (b with two) ended: nothing waits for the other.
        judge = hosts[names[-1]]
        if judge.exited_at is not None:
            for h in hosts.values():
                if h.proc.poll() is None:
                    h.proc.kill()
                    h.note(now(), "judge-ended-kill")
        time.sleep(0.05)
    for h in hosts.values():
        h.proc.wait()
        if h.exited_at is None:
            h.exited_at = now()
    for th in threads:
        th.join(timeout=5)

    ok = not timed_out
    for h in hosts.values():
        rc = h.proc.returncode
        h.note(h.exited_at, "exited", rc=rc, wall_s=round(h.exited_at, 1))
        if h.expect_reset_at is not None:
            fired = h.killed_at is None and not h.powered_off and not timed_out
            h.note(h.exited_at, "watchdog-reset" if fired else "watchdog-not-fired",
                   after_s=round(h.exited_at - h.expect_reset_at, 3))
            ok = ok and fired
        h.raw.close()
        h.tlog.close()
    print(f"two-host: {'timed out after %d s' % args.timeout if timed_out else 'both consoles ended'}; "
          + ", ".join(f"{h.name}: rc {h.proc.returncode} at {h.exited_at:.1f} s"
                      + (f" (killed at {h.killed_at:.1f} s)" if h.killed_at is not None else "")
                      for h in hosts.values()), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
