import assert from "node:assert/strict";
import {
  type AttachedLink,
  type CgroupAttacher,
  CgroupFollower,
  type FollowerOptions,
} from "./follower.ts";
import type { KubeletProcess } from "./kubelet_process.ts";
import type { ProcessInfo } from "./kubelet_finder.ts";
import { kubeletProcess } from "./_kubelet_process_fixture.ts";
import { realTimers } from "../time/timers.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { StandingByError } from "../datapath/takeover.ts";

const MOUNTS = [{ mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" }];
const KUBELET_DIR = "/sys/fs/cgroup/system.slice/kubelet.service";

/** A pretend kernel: cgroup dirs with ids, and links that die with their cgroup. */
class FakeNode implements CgroupAttacher {
  dirs = new Map<string, bigint>();
  nextId = 100n;
  /** `mine` is false once another agent's program runs in the links. */
  link: { cgroupId: bigint; mine: boolean } | null = null;
  attaches: string[] = [];
  attachError: Error | null = null;
  kubelets: KubeletProcess[] = [];
  extra: ProcessInfo[] = [];
  watched: string[] = [];
  onWatch: (() => void) | null = null;

  constructor() {
    this.mkdir("/sys/fs/cgroup");
    this.mkdir("/sys/fs/cgroup/system.slice");
  }

  mkdir(dir: string): bigint {
    const id = this.nextId++;
    this.dirs.set(dir, id);
    return id;
  }
  rmdir(dir: string): void {
    this.dirs.delete(dir);
  }
  attach(path: string): void {
    if (this.attachError) throw this.attachError;
    this.attaches.push(path);
    this.link = { cgroupId: this.dirs.get(path)!, mine: true };
  }
  links(): AttachedLink[] {
    if (!this.link) {
      return [{ program: "connect4", pinned: false, alive: false, cgroupId: 0n, current: false }];
    }
    const alive = [...this.dirs.values()].includes(this.link.cgroupId);
    const cgroupId = alive ? this.link.cgroupId : 0n;
    const current = this.link.mine;
    return ["connect4", "connect6"].map((program) => ({
      program,
      pinned: true,
      alive,
      cgroupId,
      current,
    }));
  }
  options(extra: Partial<FollowerOptions> = {}): FollowerOptions {
    return {
      kubeletCgroup: KUBELET_DIR,
      attacher: this,
      mounts: () => MOUNTS,
      findKubelets: () => ({ found: this.kubelets, lookalikesNotListed: 0 }),
      extraProcesses: () => this.extra,
      cgroupId: (dir) => this.dirs.get(dir) ?? null,
      watch: (dir, onChange) => {
        this.watched.push(dir);
        this.onWatch = onChange;
        return { close: () => {} };
      },
      queryAttachments: () => ({ flags: 0, progIds: [] }),
      timers: { ...realTimers, now: () => 0 },
      ...extra,
    };
  }
}

const kubelet = kubeletProcess;

const CONTAINER =
  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-ab.scope";

Deno.test("CgroupFollower attaches to the configured cgroup when it exists", () => {
  const node = new FakeNode();
  const id = node.mkdir(KUBELET_DIR);
  const follower = new CgroupFollower(node.options());
  const s = follower.sync();
  assert.deepEqual(node.attaches, [KUBELET_DIR]);
  assert.equal(s.attached, true);
  assert.equal(s.cgroupId, id);
  assert.equal(s.lastError, null);
  assert.deepEqual(follower.readiness(), { ready: true, reasons: [] });
});

Deno.test("CgroupFollower does not re-attach while the links are alive on the cgroup", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  const follower = new CgroupFollower(node.options());
  follower.sync();
  follower.sync();
  follower.sync();
  assert.equal(node.attaches.length, 1);
});

Deno.test("CgroupFollower swaps in its program when live links on the cgroup run another", () => {
  const node = new FakeNode();
  const id = node.mkdir(KUBELET_DIR);
  // Pins left by another release: alive, on the right cgroup, not this agent's program.
  node.link = { cgroupId: id, mine: false };
  const follower = new CgroupFollower(node.options());
  assert.equal(follower.sync().attached, true);
  assert.deepEqual(node.attaches, [KUBELET_DIR]);
  assert.equal(node.link.mine, true);
  // Another agent swaps its program in behind this one's back: the next check swaps back.
  node.link.mine = false;
  follower.sync();
  assert.deepEqual(node.attaches, [KUBELET_DIR, KUBELET_DIR]);
});

Deno.test("CgroupFollower waits for a missing cgroup, not ready, and attaches when it appears", () => {
  const node = new FakeNode();
  const follower = new CgroupFollower(node.options());
  const s = follower.sync();
  assert.equal(s.attached, false);
  assert.match(s.lastError!, /does not exist yet/);
  assert.equal(follower.readiness().ready, false);
  node.mkdir(KUBELET_DIR);
  assert.equal(follower.sync().attached, true);
  assert.deepEqual(node.attaches, [KUBELET_DIR]);
});

Deno.test("CgroupFollower re-attaches when the cgroup is removed and recreated", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  const follower = new CgroupFollower(node.options());
  follower.sync();
  node.rmdir(KUBELET_DIR);
  const gone = follower.sync();
  assert.equal(gone.attached, false);
  const newId = node.mkdir(KUBELET_DIR);
  const back = follower.sync();
  assert.equal(back.attached, true);
  assert.equal(back.cgroupId, newId);
  assert.equal(node.attaches.length, 2);
});

Deno.test("CgroupFollower syncs on an inotify event and on the timer within a second", () => {
  const { clock, timers } = fakeTime();
  const node = new FakeNode();
  const follower = new CgroupFollower(node.options({ timers }));
  follower.start();
  assert.deepEqual(node.watched, ["/sys/fs/cgroup/system.slice"]);
  node.mkdir(KUBELET_DIR);
  node.onWatch!();
  clock.tick(1);
  assert.equal(follower.status().attached, true);
  node.rmdir(KUBELET_DIR);
  node.mkdir(KUBELET_DIR);
  clock.tick(999);
  assert.equal(node.attaches.length, 2);
  follower.stop();
  assert.equal(clock.countTimers(), 0);
});

/** A started follower on fake time over an existing kubelet cgroup, counting its /proc scans. */
function startedOnFakeTime(extra: Partial<FollowerOptions> = {}) {
  const { clock, timers } = fakeTime();
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  let scans = 0;
  const follower = new CgroupFollower(node.options({
    timers,
    findKubelets: () => (scans++, { found: node.kubelets, lookalikesNotListed: 0 }),
    ...extra,
  }));
  follower.start();
  return { clock, node, follower, scans: () => scans };
}

Deno.test("CgroupFollower gathers a burst of inotify events into one sync", () => {
  const t = startedOnFakeTime();
  const before = t.scans();
  for (let i = 0; i < 20; i++) t.node.onWatch!();
  t.clock.tick(0);
  assert.equal(t.scans() - before, 1);
  t.follower.stop();
});

Deno.test("CgroupFollower rescans /proc on its scan interval, not on every check", () => {
  const t = startedOnFakeTime({ checkIntervalMs: 500, scanIntervalMs: 10_000 });
  t.clock.tick(500); // the first attach asks for one more scan, at the next check
  const settled = t.scans();
  t.clock.tick(9_500);
  assert.equal(t.scans(), settled, "19 checks, no scan");
  t.clock.tick(500);
  assert.equal(t.scans(), settled + 1);
  t.follower.stop();
});

Deno.test("CgroupFollower watches the nearest existing ancestor of a missing parent", () => {
  const node = new FakeNode();
  const follower = new CgroupFollower(node.options({ kubeletCgroup: "/sys/fs/cgroup/no/such/x" }));
  follower.sync();
  assert.deepEqual(node.watched, ["/sys/fs/cgroup"]);
});

Deno.test("CgroupFollower reports a kubelet found in another cgroup as a mismatch", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.kubelets = [kubelet(4242, "/system.slice/k3s.service")];
  const events: string[] = [];
  const follower = new CgroupFollower(node.options({
    events: { emit: (type, reason) => events.push(`${type} ${reason}`) },
  }));
  const s = follower.sync();
  assert.deepEqual(s.mismatch, {
    kubeletPid: 4242,
    kubeletComm: "kubelet",
    kubeletCgroup: "/sys/fs/cgroup/system.slice/k3s.service",
  });
  assert.ok(events.includes("Warning KubeletCgroupMismatch"));
  const r = follower.readiness();
  assert.equal(r.ready, false);
  assert.match(r.reasons[0], /pid 4242.*k3s\.service/);
});

Deno.test("CgroupFollower accepts a kubelet in a child of the configured cgroup", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.kubelets = [kubelet(7, "/system.slice/kubelet.service/sub")];
  assert.equal(new CgroupFollower(node.options()).sync().mismatch, null);
});

Deno.test("CgroupFollower with auto follows the kubelet to its cgroup", () => {
  const node = new FakeNode();
  const k3s = "/sys/fs/cgroup/system.slice/k3s.service";
  node.mkdir(k3s);
  node.kubelets = [kubelet(99, "/system.slice/k3s.service")];
  const follower = new CgroupFollower(node.options({ kubeletCgroup: "auto" }));
  const s = follower.sync();
  assert.equal(s.path, k3s);
  assert.equal(s.attached, true);
  assert.equal(s.mismatch, null);
  assert.deepEqual(node.attaches, [k3s]);
});

Deno.test("CgroupFollower with auto and no kubelet waits and is not ready", () => {
  const node = new FakeNode();
  const follower = new CgroupFollower(node.options({ kubeletCgroup: "auto" }));
  const s = follower.sync();
  assert.equal(s.path, null);
  assert.match(s.lastError!, /no kubelet process found/);
  assert.deepEqual(node.attaches, []);
});

Deno.test("CgroupFollower lists processes other than the kubelet and warns once", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.extra = [{ pid: 555, comm: "containerd", cgroupDir: KUBELET_DIR }];
  const events: string[] = [];
  const follower = new CgroupFollower(node.options({
    events: { emit: (_type, reason, message) => events.push(`${reason}: ${message}`) },
  }));
  assert.deepEqual(follower.sync().extraProcesses.map((p) => p.pid), [555]);
  follower.sync();
  const shared = events.filter((e) => e.startsWith("KubeletCgroupShared"));
  assert.equal(shared.length, 1);
  assert.match(shared[0], /555 \(containerd\)/);
});

Deno.test("CgroupFollower explains EPERM with the ancestor that holds an exclusive program", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.attachError = Object.assign(new Error("bpf_link_create failed: EPERM"), { code: "EPERM" });
  const follower = new CgroupFollower(node.options({
    queryAttachments: (dir, type) =>
      dir === "/sys/fs/cgroup/system.slice" && type === "connect4"
        ? { flags: 0, progIds: [31] }
        : { flags: 0, progIds: [] },
  }));
  const s = follower.sync();
  assert.equal(s.attached, false);
  assert.match(s.lastError!, /EPERM because its ancestor "\/sys\/fs\/cgroup\/system\.slice"/);
  assert.match(s.lastError!, /connect4 program \(id 31\)/);
});

Deno.test("CgroupFollower reports an agent standing by as not attaching, not as a failed attach", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.attachError = new StandingByError("a live agent runs the newer layout 3");
  const s = new CgroupFollower(node.options()).sync();
  assert.equal(s.attached, false);
  assert.match(s.lastError!, /^Not attaching to kubelet cgroup ".*": This agent stands by: a live/);
  assert.doesNotMatch(s.lastError!, /Cannot attach/);
});

Deno.test("CgroupFollower calls onChange only when the status changes", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  const follower = new CgroupFollower(node.options());
  let calls = 0;
  follower.onChange(() => calls++);
  follower.sync();
  follower.sync();
  assert.equal(calls, 1);
});

Deno.test("CgroupFollower refuses a check interval above one second", () => {
  const node = new FakeNode();
  assert.throws(
    () => new CgroupFollower(node.options({ checkIntervalMs: 5000 })),
    new RangeError("Cgroup check interval must be at most 1000 ms: 5000"),
  );
});

Deno.test("CgroupFollower with auto never follows a kubelet in a container cgroup", () => {
  const node = new FakeNode();
  node.mkdir(`/sys/fs/cgroup${CONTAINER}`);
  node.kubelets = [kubelet(66, CONTAINER)];
  const events: string[] = [];
  const follower = new CgroupFollower(node.options({
    kubeletCgroup: "auto",
    events: { emit: (type, reason, message) => events.push(`${type} ${reason}: ${message}`) },
  }));
  const s = follower.sync();
  assert.equal(s.path, null);
  assert.equal(s.attached, false);
  assert.deepEqual(node.attaches, []);
  assert.deepEqual(s.otherKubelets.map((k) => k.pid), [66]);
  assert.match(s.otherKubelets[0].reason, /runs in a pod cgroup/);
  const lookalike = events.filter((e) => e.startsWith("Warning KubeletLookalike"));
  assert.equal(lookalike.length, 1);
  assert.match(lookalike[0], /Process 66 \(kubelet\) looks like a kubelet but is not followed/);
  follower.sync();
  assert.equal(events.filter((e) => e.includes("KubeletLookalike")).length, 1, "reported once");
});

Deno.test("CgroupFollower with auto never follows a kubelet in another mount namespace", () => {
  const node = new FakeNode();
  node.mkdir("/sys/fs/cgroup/user.slice");
  node.kubelets = [kubelet(67, "/user.slice", { hostMountNamespace: false })];
  const s = new CgroupFollower(node.options({ kubeletCgroup: "auto" })).sync();
  assert.equal(s.path, null);
  assert.match(s.otherKubelets[0].reason, /mount namespace other than the host's/);
});

Deno.test("CgroupFollower with auto prefers the kubelet's unit to a kubelet elsewhere", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.mkdir("/sys/fs/cgroup/user.slice");
  node.kubelets = [kubelet(5, "/user.slice"), kubelet(900, "/system.slice/kubelet.service")];
  const s = new CgroupFollower(node.options({ kubeletCgroup: "auto" })).sync();
  assert.equal(s.path, KUBELET_DIR);
  assert.equal(s.kubelet?.pid, 900);
  assert.deepEqual(node.attaches, [KUBELET_DIR]);
  assert.deepEqual(s.otherKubelets.map((k) => [k.pid, k.reason]), [
    [5, `a second kubelet outside the kubelet cgroup "${KUBELET_DIR}"`],
  ]);
});

Deno.test("CgroupFollower with auto stays on its kubelet's cgroup when another appears", () => {
  const node = new FakeNode();
  node.mkdir(KUBELET_DIR);
  node.mkdir("/sys/fs/cgroup/user.slice");
  node.kubelets = [kubelet(900, "/system.slice/kubelet.service")];
  const { clock, timers } = fakeTime();
  const follower = new CgroupFollower(node.options({ kubeletCgroup: "auto", timers }));
  follower.sync();
  // The kubelet stops; another root process outside any container names itself kubelet.
  node.kubelets = [kubelet(77, "/user.slice")];
  clock.tick(60_000);
  const s = follower.sync();
  assert.equal(s.path, KUBELET_DIR);
  assert.deepEqual(node.attaches, [KUBELET_DIR]);
  // Mismatch detection stays on in auto: the agent says so and is not ready.
  assert.equal(s.mismatch?.kubeletPid, 77);
  assert.equal(follower.readiness().ready, false);
});
