/**
 * The cgroup follower on the real kernel: real cgroups, real pinned links,
 * a fake kubelet process, and probes from the simulated node that only reach
 * their pod when the program is attached to the cgroup they run in.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CgroupFollower, type FollowerOptions } from "../lib/cgroup/follower.ts";
import { defaultConfig } from "../lib/config.ts";
import { markFor } from "../lib/probe/key.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { statCgroupId } from "../lib/os/cgroupfs.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { findKubelets } from "../lib/cgroup/kubelet_finder.ts";
import { run } from "../lib/os/process.ts";
import { POD_IPV4, SimNode } from "../lib/demo/netns.ts";
import { PodServer } from "../lib/demo/pod_server.ts";
import { Prober } from "../lib/prober/mod.ts";
import { CgroupTree } from "./helpers/cgroup_fixture.ts";
import { privilegedTests, testPinPath } from "./helpers/sim_world.ts";
import { waitFor } from "./helpers/wait.ts";

const privileged = privilegedTests();
const PORT = 8080;

/** A datapath on a unique pin path, a cgroup tree, and everything cleaned up after. */
class Setup implements AsyncDisposable {
  tree = CgroupTree.create();
  pinPath = testPinPath();
  datapath = Datapath.open({ pinPath: this.pinPath });
  followers: CgroupFollower[] = [];
  events: string[] = [];
  /** Only the fake kubelets of this test count (other tests may run their own). */
  ours = new Set<number>();

  follower(extra: Partial<FollowerOptions>): CgroupFollower {
    const f = new CgroupFollower({
      kubeletCgroup: this.tree.path("kubelet.service"),
      attacher: this.datapath,
      events: {
        emit: (type, reason, message) => this.events.push(`${type} ${reason}: ${message}`),
      },
      // Every candidate, then this test's: the machine's other kubelets must not take the places.
      findKubelets: () => ({
        found: findKubelets("/proc", { maxLookalikes: Infinity }).found
          .filter((k) => this.ours.has(k.pid)),
        lookalikesNotListed: 0,
      }),
      ...extra,
    });
    this.followers.push(f);
    return f;
  }

  async kubelet(rel: string, wrapper: string[] = []): Promise<number> {
    const pid = await this.tree.fakeKubelet(rel, wrapper);
    this.ours.add(pid);
    return pid;
  }

  linkIds(): bigint[] {
    return this.datapath.links().map((l) => (l.alive ? l.cgroupId : 0n));
  }

  async dispose(): Promise<void> {
    for (const f of this.followers) f.stop();
    this.datapath.close();
    uninstall(this.pinPath);
    await this.tree.dispose();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

/** The sim node with one pod on network 1, registered for PORT. */
async function podWorld(s: Setup): Promise<{ node: SimNode; server: PodServer }> {
  const node = await SimNode.create({ networks: [1] });
  try {
    const server = await PodServer.start({
      netns: node.network(1).podNetns,
      name: "pod-net1",
      addresses: [POD_IPV4],
      httpPorts: [PORT],
    });
    s.datapath.store.put({
      key: { family: "ipv4", address: POD_IPV4, port: PORT },
      value: { networkId: 1, mark: markFor(defaultConfig(), 1) },
    });
    return { node, server };
  } catch (e) {
    await node.dispose();
    throw e;
  }
}

async function probeFrom(node: SimNode, cgroup: string): Promise<string> {
  await using prober = await Prober.start({ netns: node.netns, cgroup });
  const r = await prober.probe({ host: POD_IPV4, port: PORT, timeoutMs: 1000, http: "/" });
  return r.result === "reached" ? (r.body ?? "") : r.result;
}

privileged(
  "the follower attaches to the configured cgroup and probes from it are tagged",
  async () => {
    await using s = new Setup();
    const dir = s.tree.mkdir("kubelet.service");
    const { node, server } = await podWorld(s);
    try {
      const status = s.follower({}).sync();
      assert.equal(status.attached, true);
      assert.equal(status.cgroupId, statCgroupId(dir));
      assert.deepEqual(s.linkIds(), [statCgroupId(dir), statCgroupId(dir)]);
      assert.equal(await probeFrom(node, dir), "pod-net1");
    } finally {
      await server.dispose();
      await node.dispose();
    }
  },
);

privileged("the follower waits for a missing cgroup and attaches once it is created", async () => {
  await using s = new Setup();
  const f = s.follower({});
  f.start();
  assert.equal(f.status().attached, false);
  assert.match(f.status().lastError!, /does not exist yet/);
  assert.equal(f.readiness().ready, false);
  const dir = s.tree.mkdir("kubelet.service");
  await waitFor(() => f.status().attached, {
    timeout: 1000,
    message: "attach after the cgroup appears",
  });
  assert.deepEqual(s.linkIds(), [statCgroupId(dir), statCgroupId(dir)]);
});

privileged(
  "a removed and recreated kubelet cgroup is re-attached and probes work again within a second",
  async () => {
    await using s = new Setup();
    const dir = s.tree.mkdir("kubelet.service");
    const { node, server } = await podWorld(s);
    try {
      const f = s.follower({});
      f.start();
      await waitFor(() => f.status().attached, { timeout: 1000, message: "first attach" });
      const oldId = statCgroupId(dir);
      s.tree.rmdir("kubelet.service");
      await waitFor(() => s.linkIds().every((id) => id === 0n), {
        timeout: 1000,
        message: "links to die",
      });
      s.tree.mkdir("kubelet.service");
      const newId = statCgroupId(dir);
      assert.notEqual(newId, oldId);
      await waitFor(() => s.linkIds().every((id) => id === newId), {
        timeout: 1000,
        message: "re-attach to the new cgroup within a second",
      });
      assert.equal(await probeFrom(node, dir), "pod-net1");
      // Dead links were replaced, not left beside the new ones.
      const pins = [...Deno.readDirSync(s.pinPath)].map((e) => e.name).sort();
      assert.deepEqual(pins.filter((n) => n.startsWith("link")), [
        "link_connect4",
        "link_connect6",
      ]);
    } finally {
      await server.dispose();
      await node.dispose();
    }
  },
);

privileged("a kubelet running in another cgroup is reported as a mismatch", async () => {
  await using s = new Setup();
  s.tree.mkdir("kubelet.service");
  s.tree.mkdir("k3s.service");
  const pid = await s.kubelet("k3s.service");
  const status = s.follower({}).sync();
  assert.deepEqual(status.mismatch, {
    kubeletPid: pid,
    kubeletComm: "kubelet",
    kubeletCgroup: s.tree.path("k3s.service"),
  });
  assert.ok(s.events.some((e) => e.startsWith("Warning KubeletCgroupMismatch")));
  assert.equal(s.followers[0].readiness().ready, false);
});

privileged("with auto the follower finds the kubelet and attaches to its cgroup", async () => {
  await using s = new Setup();
  const dir = s.tree.mkdir("elsewhere/kubelet.scope");
  await s.kubelet("elsewhere/kubelet.scope");
  const status = s.follower({ kubeletCgroup: "auto" }).sync();
  assert.equal(status.path, dir);
  assert.equal(status.attached, true);
  assert.equal(status.mismatch, null);
  assert.deepEqual(s.linkIds(), [statCgroupId(dir), statCgroupId(dir)]);
});

privileged("processes other than the kubelet in the kubelet cgroup are listed", async () => {
  await using s = new Setup();
  s.tree.mkdir("kubelet.service/child");
  const kubelet = await s.kubelet("kubelet.service");
  const other = await s.tree.spawn("kubelet.service/child", ["sleep", "600"], "sleep");
  const status = s.follower({}).sync();
  assert.deepEqual(status.extraProcesses, [
    { pid: other, comm: "sleep", cgroupDir: s.tree.path("kubelet.service/child") },
  ]);
  assert.ok(!status.extraProcesses.some((p) => p.pid === kubelet));
  assert.ok(
    s.events.some((e) => e.includes("KubeletCgroupShared") && e.includes(`${other} (sleep)`)),
  );
});

privileged(
  "an exclusive program on an ancestor gives an EPERM message naming that cgroup",
  async () => {
    await using s = new Setup();
    const parent = s.tree.mkdir("system.slice");
    const kubelet = s.tree.mkdir("system.slice/kubelet.service");
    // Lace's own connect4 program, attached to a scratch cgroup to learn its id.
    s.datapath.attach(s.tree.mkdir("scratch"));
    const progId = s.datapath.links()[0].progId;
    const progPin = join(s.pinPath, "exclusive_prog");
    await run(["bpftool", "prog", "pin", "id", String(progId), progPin]);
    await run(["bpftool", "cgroup", "attach", parent, "connect4", "pinned", progPin]);
    try {
      const status = s.follower({ kubeletCgroup: kubelet }).sync();
      assert.equal(status.attached, false);
      assert.match(
        status.lastError!,
        new RegExp(
          `EPERM because its ancestor "${parent}" holds an exclusive \\(non-multi\\) connect4 ` +
            `program \\(id ${progId}\\)`,
        ),
      );
      assert.ok(s.events.some((e) => e.startsWith("Warning ProbeAttachFailed")));
    } finally {
      await run(["bpftool", "cgroup", "detach", parent, "connect4", "pinned", progPin]);
      Deno.removeSync(progPin);
    }
  },
);

/** A pod container's cgroup as the systemd driver names it, inside the test's tree. */
const CONTAINER_SCOPE = "kubepods.slice/kubepods-besteffort.slice/" +
  "kubepods-besteffort-pod0d1e.slice/cri-containerd-4f3a.scope";

privileged(
  "with auto a process named kubelet in a pod's container cgroup is never followed",
  async () => {
    await using s = new Setup();
    s.tree.mkdir(CONTAINER_SCOPE);
    const impostor = await s.kubelet(CONTAINER_SCOPE);
    const f = s.follower({ kubeletCgroup: "auto" });
    const status = f.sync();
    assert.equal(status.path, null);
    assert.equal(status.attached, false);
    assert.deepEqual(s.linkIds().filter((id) => id !== 0n), [], "no link anywhere");
    assert.deepEqual(status.otherKubelets.map((k) => k.pid), [impostor]);
    assert.match(status.otherKubelets[0].reason, /pod cgroup/);
    assert.ok(
      s.events.some((e) => e.startsWith("Warning KubeletLookalike") && e.includes(`${impostor}`)),
    );
  },
);

privileged(
  "with auto the real kubelet is chosen over an older one in a container cgroup",
  async () => {
    await using s = new Setup();
    s.tree.mkdir(CONTAINER_SCOPE);
    const real = s.tree.mkdir("system.slice/kubelet.service");
    const impostor = await s.kubelet(CONTAINER_SCOPE);
    const kubelet = await s.kubelet("system.slice/kubelet.service");
    const status = s.follower({ kubeletCgroup: "auto" }).sync();
    assert.equal(status.path, real);
    assert.equal(status.kubelet?.pid, kubelet);
    assert.deepEqual(s.linkIds(), [statCgroupId(real), statCgroupId(real)]);
    assert.deepEqual(status.otherKubelets.map((k) => k.pid), [impostor]);
  },
);

privileged(
  "with auto a process named kubelet in another mount namespace is never followed",
  async () => {
    await using s = new Setup();
    // Its cgroup looks like the kubelet's unit: only the mount namespace gives it away.
    s.tree.mkdir("system.slice/kubelet.service");
    const impostor = await s.kubelet("system.slice/kubelet.service", ["unshare", "-m"]);
    const status = s.follower({ kubeletCgroup: "auto" }).sync();
    assert.equal(status.path, null);
    assert.equal(status.attached, false);
    assert.deepEqual(status.otherKubelets.map((k) => [k.pid, k.reason]), [
      [impostor, "it runs in a mount namespace other than the host's"],
    ]);
  },
);

privileged("with auto a process named kubelet that is not root is never followed", async () => {
  await using s = new Setup();
  s.tree.mkdir("system.slice/kubelet.service");
  const impostor = await s.kubelet("system.slice/kubelet.service", [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
  ]);
  const status = s.follower({ kubeletCgroup: "auto" }).sync();
  assert.equal(status.path, null);
  assert.deepEqual(status.otherKubelets.map((k) => [k.pid, k.reason]), [
    [impostor, "it runs as uid 65534, not as root"],
  ]);
});
