/**
 * `lace doctor` on the real kernel: a healthy setup (pinned datapath attached
 * to a test kubelet cgroup holding a fake kubelet, a fake agent endpoint)
 * and one broken setup per test, then `doctor probes` against pods of the
 * simulated node for every result class.
 */
import assert from "node:assert/strict";
import { captureConsole } from "./helpers/capture_console.ts";
import { defaultConfig } from "../lib/config.ts";
import { markFor } from "../lib/probe/key.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { openCurrentMap, uninstall } from "../lib/datapath/pins.ts";
import { runDoctor } from "../lib/doctor/command.ts";
import { type HttpSurface, type Readiness, startLocalServer } from "../lib/agent/http/surfaces.ts";
import type { TargetView } from "../lib/agent_api/views.ts";
import type { ProbeKey } from "../lib/probe/key.ts";
import { randomSuffix, run } from "../lib/os/process.ts";
import { POD_IPV4, POD_IPV6, SimNode } from "../lib/demo/netns.ts";
import { PodServer } from "../lib/demo/pod_server.ts";
import { CgroupTree } from "./helpers/cgroup_fixture.ts";
import { privilegedTests, testPinPath } from "./helpers/sim_world.ts";
import { waitFor } from "./helpers/wait.ts";

const privileged = privilegedTests();

interface DoctorJson {
  ok: boolean;
  checks: { name: string; ok: boolean; message: string; fix: string; severity: string }[];
}

/** Runs runDoctor with console output captured. */
const doctor = (args: string[]) => captureConsole(() => runDoctor(args));

/** A fake agent's local socket: ready or not, with the targets it reports. */
class FakeAgent implements AsyncDisposable {
  readiness: Readiness = { ready: true, reasons: [] };
  targets: TargetView[] = [];
  server!: HttpSurface;
  dir = Deno.makeTempDirSync({ prefix: "lace-doctor-agent-" });

  static async create(): Promise<FakeAgent> {
    const a = new FakeAgent();
    a.server = await startLocalServer(`${a.dir}/agent.sock`, {
      readiness: () => a.readiness,
      targets: () => a.targets,
      metricsText: () => Promise.resolve(""),
      metricsContentType: "text/plain",
    });
    return a;
  }
  get addr(): string {
    return this.server.addr;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.server?.shutdown();
    Deno.removeSync(this.dir, { recursive: true });
  }
}

/** A healthy node: datapath attached to <tree>/kubelet.service with a fake kubelet in it. */
class Healthy implements AsyncDisposable {
  tree = CgroupTree.create();
  pinPath = testPinPath();
  datapath = Datapath.open({ pinPath: this.pinPath });
  agent!: FakeAgent;
  kubeletDir = this.tree.mkdir("kubelet.service");

  static async create(): Promise<Healthy> {
    const h = new Healthy();
    try {
      h.agent = await FakeAgent.create();
      await h.tree.fakeKubelet("kubelet.service");
      h.datapath.attach(h.kubeletDir);
      h.register({ family: "ipv4", address: POD_IPV4, port: 8080 }, 1, "default/web", "/healthz");
      return h;
    } catch (e) {
      await h[Symbol.asyncDispose]();
      throw e;
    }
  }

  register(key: ProbeKey, networkId: number, pod: string, httpPath?: string): void {
    const mark = markFor(defaultConfig(), networkId);
    this.datapath.store.put({ key, value: { networkId, mark } });
    this.agent.targets.push({ ...key, networkId, mark, pod, ...(httpPath ? { httpPath } : {}) });
  }

  args(extra: string[] = []): string[] {
    return [
      "--json",
      "--pin-path",
      this.pinPath,
      "--kubelet-cgroup",
      this.kubeletDir,
      "--agent-socket",
      this.agent.addr,
      ...extra,
    ];
  }

  async check(extra: string[] = []): Promise<{ code: number; json: DoctorJson }> {
    const r = await doctor(this.args(extra));
    return { code: r.code, json: JSON.parse(r.out) as DoctorJson };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.agent?.[Symbol.asyncDispose]();
    this.datapath.close();
    uninstall(this.pinPath);
    await this.tree.dispose();
  }
}

function failed(json: DoctorJson): string[] {
  return json.checks.filter((c) => !c.ok && c.severity === "error").map((c) => c.name);
}

function named(json: DoctorJson, name: string) {
  const c = json.checks.find((x) => x.name === name);
  assert.ok(c, `no check "${name}" in ${JSON.stringify(json)}`);
  return c;
}

privileged("doctor passes a healthy setup and exits 0", async () => {
  await using h = await Healthy.create();
  const { code, json } = await h.check();
  assert.deepEqual(failed(json), []);
  assert.equal(json.ok, true);
  assert.equal(code, 0);
  for (const c of json.checks) {
    assert.deepEqual(Object.keys(c).sort(), ["fix", "message", "name", "ok", "severity"]);
  }
  assert.match(named(json, "probe-targets").message, /^1 probe targets in the map, 1 known/);
});

privileged("doctor reports a pin path that is not on bpffs", async () => {
  await using h = await Healthy.create();
  const { code, json } = await h.check(["--pin-path", `/tmp/lace-not-bpffs-${randomSuffix()}`]);
  assert.equal(code, 1);
  assert.equal(json.ok, false);
  assert.match(named(json, "bpffs").message, /is not on bpffs/);
  assert.ok(failed(json).includes("pinned-map"));
});

privileged("doctor reports missing pins and links with the fix to start the agent", async () => {
  await using h = await Healthy.create();
  const empty = testPinPath();
  const { json } = await h.check(["--pin-path", empty]);
  for (const name of ["pinned-map", "link-connect4", "link-connect6", "program-version"]) {
    assert.ok(failed(json).includes(name), name);
  }
  assert.match(named(json, "link-connect4").fix, /start the agent/);
});

privileged("doctor reports dead links after the kubelet cgroup was removed", async () => {
  await using h = await Healthy.create();
  const dir = h.tree.mkdir("gone.service");
  h.datapath.attach(dir);
  h.tree.rmdir("gone.service");
  // The kernel releases a removed cgroup's programs asynchronously.
  await waitFor(() => h.datapath.links().every((l) => !l.alive), {
    timeout: 2000,
    message: "the links to lose their cgroup",
  });
  const { json } = await h.check(["--kubelet-cgroup", dir]);
  assert.match(named(json, "link-connect4").message, /link is dead/);
  assert.match(named(json, "kubelet-cgroup").message, /does not exist/);
});

privileged("doctor names the cgroup the links are on when it is not the kubelet's", async () => {
  await using h = await Healthy.create();
  const other = h.tree.mkdir("other.service");
  h.datapath.attach(other);
  const { json } = await h.check();
  const c = named(json, "link-connect6");
  assert.equal(c.ok, false);
  assert.match(c.message, new RegExp(`\\("${other}"\\), not to the kubelet cgroup`));
});

privileged("doctor reports a kubelet that runs outside the configured cgroup", async () => {
  await using h = await Healthy.create();
  h.tree.mkdir("k3s.service");
  const pid = await h.tree.fakeKubelet("k3s.service");
  const empty = h.tree.mkdir("empty.service");
  h.datapath.attach(empty);
  const { json } = await h.check(["--kubelet-cgroup", empty]);
  const c = named(json, "kubelet-process");
  assert.equal(c.ok, false);
  assert.ok(
    c.message.includes(`pid ${pid}, kubelet) runs in cgroup "${h.tree.path("k3s.service")}"`),
  );
});

privileged(
  "doctor names a k3s server in the kubelet cgroup as an API server whose proxying is tagged",
  async () => {
    await using h = await Healthy.create();
    const server = await h.tree.fakeProcess("kubelet.service", "k3s-server");
    const { code, json } = await h.check();
    const c = named(json, "api-server-in-kubelet-cgroup");
    assert.equal(c.severity, "warning");
    assert.match(c.message, new RegExp(`${server} \\(k3s-server: k3s server`));
    assert.match(c.fix, /chain the lace CNI plugin/);
    assert.equal(code, 0, "a warning, not an error");
  },
);

privileged("doctor reports a configured kubelet cgroup that does not exist", async () => {
  await using h = await Healthy.create();
  const { code, json } = await h.check(["--kubelet-cgroup", h.tree.path("nope.service")]);
  assert.equal(code, 1);
  assert.match(named(json, "kubelet-cgroup").message, /nope\.service" does not exist/);
  assert.match(named(json, "kubelet-cgroup").fix, /node\.kubeletCgroupPath/);
});

privileged("doctor reports an agent that does not answer", async () => {
  await using h = await Healthy.create();
  const { json } = await h.check(["--agent-socket", `${h.agent.dir}/nobody-here.sock`]);
  assert.deepEqual(failed(json), ["agent-health"]);
});

privileged("doctor reports an agent that is not ready with its reasons", async () => {
  await using h = await Healthy.create();
  h.agent.readiness = { ready: false, reasons: ["first pod list not applied yet"] };
  const { json } = await h.check();
  assert.deepEqual(failed(json), ["agent-ready"]);
  assert.match(named(json, "agent-ready").message, /first pod list not applied yet/);
});

privileged("doctor reports a pinned program from another build", async () => {
  await using h = await Healthy.create();
  {
    using info = openCurrentMap(h.pinPath, "info");
    const value = info.lookup(new Uint8Array(4))!;
    value.fill(0xee, 16, 48);
    info.update(new Uint8Array(4), value);
  }
  const { json } = await h.check();
  assert.deepEqual(failed(json), ["program-version"]);
  assert.match(
    named(json, "program-version").message,
    /node runs BPF object sha256 eeeeeeeeeeee \(map layout ABI 2\), not this lace's/,
  );
});

/** The sim node with pods in networks 1 and 2, HTTP on 8080 and TCP on 9000 in both. */
async function withPods(
  fn: (node: SimNode) => Promise<void>,
): Promise<void> {
  const node = await SimNode.create({ networks: [1, 2] });
  const servers: PodServer[] = [];
  try {
    for (const net of node.networks) {
      servers.push(
        await PodServer.start({
          netns: net.podNetns,
          name: net.pod,
          addresses: [POD_IPV4, POD_IPV6],
          httpPorts: [8080],
          tcpPorts: [9000, 9001],
        }),
      );
    }
    await fn(node);
  } finally {
    for (const s of servers) await s.dispose();
    await node.dispose();
  }
}

function doctorCgroups(dir: string): string[] {
  return [...Deno.readDirSync(dir)].filter((e) => e.name.startsWith("lace-doctor-")).map((e) =>
    e.name
  );
}

privileged(
  "doctor probes reaches every target from the kubelet cgroup, with HTTP status",
  async () => {
    await using h = await Healthy.create();
    h.register({ family: "ipv6", address: POD_IPV6, port: 9000 }, 2, "default/db");
    await withPods(async (node) => {
      const r = await doctor(["probes", ...h.args(["--netns", node.netns])]);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(JSON.parse(r.out), [
        {
          pod: "default/db",
          networkId: 2,
          address: POD_IPV6,
          port: 9000,
          result: "reached",
          httpStatus: null,
        },
        {
          pod: "default/web",
          networkId: 1,
          address: POD_IPV4,
          port: 8080,
          result: "reached",
          httpStatus: 200,
        },
      ]);
      assert.deepEqual(doctorCgroups(h.kubeletDir), []);
    });
  },
);

privileged("doctor probes reports REFUSED, NO_ROUTE and TIMEOUT and exits 1", async () => {
  await using h = await Healthy.create();
  h.register({ family: "ipv4", address: POD_IPV4, port: 9999 }, 1, "default/refused");
  // Network 3 has no route on the node: the mark selects no table.
  h.register({ family: "ipv4", address: POD_IPV4, port: 9000 }, 3, "default/noroute");
  h.register({ family: "ipv4", address: POD_IPV4, port: 9001 }, 2, "default/timeout");
  await withPods(async (node) => {
    const pod2 = node.network(2).podNetns;
    const nft = (...a: string[]) => run(["ip", "netns", "exec", pod2, "nft", ...a]);
    await nft("add", "table", "inet", "lace_test");
    await nft("add", "chain", "inet", "lace_test", "in", "{ type filter hook input priority 0; }");
    await nft("add", "rule", "inet", "lace_test", "in", "tcp", "dport", "9001", "drop");
    const r = await doctor(["probes", ...h.args(["--netns", node.netns, "--timeout", "700ms"])]);
    assert.equal(r.code, 1);
    const byPod = Object.fromEntries(
      (JSON.parse(r.out) as { pod: string; result: string }[]).map((x) => [x.pod, x.result]),
    );
    assert.deepEqual(byPod, {
      "default/noroute": "NO_ROUTE",
      "default/refused": "REFUSED",
      "default/timeout": "TIMEOUT",
      "default/web": "reached",
    });
    assert.deepEqual(doctorCgroups(h.kubeletDir), []);
  });
});

privileged("doctor probes falls back to the pinned map when no agent answers", async () => {
  await using h = await Healthy.create();
  await withPods(async (node) => {
    const r = await doctor([
      "probes",
      ...h.args(["--netns", node.netns, "--agent-socket", ""]),
    ].filter((a) => a !== "--json"));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^- +1 +10\.244\.1\.10 +8080 +reached +-$/m);
    assert.match(r.out, /All 1 targets reached/);
  });
});
