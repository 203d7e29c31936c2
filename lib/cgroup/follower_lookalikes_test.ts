/**
 * The follower against a tenant that starts kubelet lookalikes by the hundred thousand, with
 * huge command lines, or vanishing mid-scan: on an in-memory /proc through the real scan.
 */
import assert from "node:assert/strict";
import { CgroupFollower } from "./follower.ts";
import { CMDLINE_MAX_BYTES, MAX_LOOKALIKES } from "./kubelet_finder.ts";
import { statusKey } from "./follower_status.ts";
import { MemoryProc, podLookalike } from "../../tests/helpers/memory_proc.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";

const MOUNTS = [{ mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" }];
const KUBELET_CGROUP = "/system.slice/kubelet.service";
const KUBELET_DIR = `/sys/fs/cgroup${KUBELET_CGROUP}`;
const KUBELET_PID = 150_000;

/** A node whose /proc holds PID 1 and the kubelet, and a follower with auto on it. */
function node() {
  const proc = new MemoryProc();
  proc.procs.set(1, { comm: "systemd", cmdline: "/sbin/init\0", cgroup: "/init.scope" });
  proc.procs.set(KUBELET_PID, {
    comm: "kubelet",
    cmdline: "/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0",
    cgroup: KUBELET_CGROUP,
  });
  const ids = new Map([["/sys/fs/cgroup", 1n], ["/sys/fs/cgroup/system.slice", 2n]]);
  ids.set(KUBELET_DIR, 3n);
  let attachedTo: string | null = null;
  const events: string[] = [];
  const { clock, timers } = fakeTime();
  const follower = new CgroupFollower({
    kubeletCgroup: "auto",
    proc,
    attacher: {
      attach: (path) => attachedTo = path,
      links: () =>
        attachedTo === null ? [] : [{
          program: "connect4",
          pinned: true,
          alive: true,
          cgroupId: ids.get(attachedTo)!,
          current: true,
        }],
    },
    mounts: () => MOUNTS,
    extraProcesses: () => [],
    cgroupId: (dir) => ids.get(dir) ?? null,
    watch: () => ({ close: () => {} }),
    queryAttachments: () => ({ flags: 0, progIds: [] }),
    timers,
    scanIntervalMs: 10_000,
    events: { emit: (type, reason, message) => events.push(`${type} ${reason}: ${message}`) },
  });
  return { proc, follower, events, clock };
}

/** Fills pids `from`, `from + 1` … with `count` lookalikes in pod cgroups. */
function startLookalikes(proc: MemoryProc, from: number, count: number): void {
  for (let i = 0; i < count; i++) proc.procs.set(from + i, podLookalike(from + i));
}

Deno.test("CgroupFollower keeps at most MAX_LOOKALIKES of 100,000 kubelet lookalikes and counts the rest", () => {
  const { proc, follower, events } = node();
  // Lookalikes on both sides of the kubelet's pid: none may push it out.
  startLookalikes(proc, 1000, 90_000);
  startLookalikes(proc, KUBELET_PID + 1, 10_000);
  const s = follower.sync();
  assert.equal(s.path, KUBELET_DIR, "the kubelet's cgroup, whatever the lookalikes");
  assert.equal(s.kubelet?.pid, KUBELET_PID);
  assert.equal(s.attached, true);
  assert.equal(s.otherKubelets.length, MAX_LOOKALIKES);
  assert.deepEqual(
    s.otherKubelets.map((k) => k.pid),
    [...Array(MAX_LOOKALIKES).keys()].map((i) => 1000 + i),
  );
  assert.equal(s.otherKubeletsNotListed, 100_000 - MAX_LOOKALIKES);
  assert.ok(statusKey(s).length < 32 * 1024, `status of ${statusKey(s).length} characters`);
  const lookalikeEvents = events.filter((e) => e.startsWith("Warning KubeletLookalike"));
  assert.equal(lookalikeEvents.length, MAX_LOOKALIKES + 1);
  assert.match(
    lookalikeEvents.at(-1)!,
    /^Warning KubeletLookalike: 99968 more processes look like a kubelet than the 32 listed/,
  );
  // A container's lookalike is ruled out by its cgroup: its user and mounts are not read.
  assert.equal(proc.reads.get("mountinfo"), 2, "PID 1's and the kubelet's");
  assert.equal(proc.reads.get("status"), 1, "the kubelet's");
});

Deno.test("CgroupFollower says once that lookalikes go unlisted while short-lived ones come and go", () => {
  const { proc, follower, events, clock } = node();
  follower.sync();
  for (let round = 0; round < 3; round++) {
    for (const pid of proc.pids()) if (pid !== 1 && pid !== KUBELET_PID) proc.procs.delete(pid);
    startLookalikes(proc, 200_000 + round * 1000, 500 + round);
    clock.tick(10_000);
    const s = follower.sync();
    assert.equal(s.otherKubelets.length, MAX_LOOKALIKES);
    assert.equal(s.otherKubeletsNotListed, 500 + round - MAX_LOOKALIKES);
  }
  assert.equal(events.filter((e) => / more processes look like a kubelet/.test(e)).length, 1);
  // Every scan's listed lookalikes are new pids: at most MAX_LOOKALIKES Events a scan.
  assert.equal(
    events.filter((e) => /^Warning KubeletLookalike: Process /.test(e)).length,
    3 * MAX_LOOKALIKES,
  );
  for (const pid of proc.pids()) if (pid !== 1 && pid !== KUBELET_PID) proc.procs.delete(pid);
  clock.tick(10_000);
  const s = follower.sync();
  assert.deepEqual([s.otherKubelets.length, s.otherKubeletsNotListed], [0, 0]);
});

Deno.test("CgroupFollower reads a bounded prefix of each command line, however long", () => {
  const { proc, follower } = node();
  const huge = "x".repeat(8 * 1024 * 1024);
  proc.procs.set(500, { ...podLookalike(500), cmdline: `/usr/bin/kubelet\0${huge}\0` });
  proc.procs.set(501, { comm: "sh", cmdline: `sh\0-c\0${huge}\0`, cgroup: "/kubepods.slice/x" });
  // The kubelet with flags beyond the bound is still the kubelet.
  proc.procs.get(KUBELET_PID)!.cmdline = `/usr/bin/kubelet\0--node-labels=${huge}\0`;
  const s = follower.sync();
  assert.ok(proc.longestRead <= CMDLINE_MAX_BYTES, `a read of ${proc.longestRead} bytes`);
  assert.equal(s.path, KUBELET_DIR);
  assert.deepEqual(s.otherKubelets.map((k) => k.pid), [500]);
});

Deno.test("CgroupFollower skips kubelet lookalikes that vanish mid-scan", () => {
  const { proc, follower, events } = node();
  startLookalikes(proc, 600, 4);
  const vanishAt = new Map([[600, "cmdline"], [601, "cgroup"], [602, "comm"]]);
  let commReads = 0;
  proc.beforeRead = (pid, name) => {
    if (pid === 602 && name === "comm" && ++commReads === 1) return; // gone after its first read
    if (vanishAt.get(pid) === name) proc.procs.delete(pid);
  };
  const s = follower.sync();
  assert.deepEqual(s.otherKubelets.map((k) => k.pid), [603], "only the one still there");
  assert.equal(events.filter((e) => e.includes("KubeletLookalike")).length, 1);
  assert.equal(s.kubelet?.pid, KUBELET_PID);
});
