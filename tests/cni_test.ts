/**
 * Lace's CNI plugin driven exactly as a runtime drives it: CNI_* variables
 * and the config on stdin, chained after the real `ptp` reference plugin
 * (host-local IPAM) inside a simulated node's namespace. The agent learns the
 * pod's address from ADD, before any pod watch event carries it, and the
 * kubelet's probes reach the pod through the mark at once.
 */
import assert from "node:assert/strict";
import { callAgent } from "../lib/cni/client.ts";
import { PROTOCOL_VERSION } from "../lib/cni/protocol.ts";
import { defaultConfig } from "../lib/config.ts";
import { markFor } from "../lib/probe/key.ts";
import { type ChainOutcome, execPlugin, laceCommand } from "./helpers/cni_runtime.ts";
import { CniWorld, HTTP_PORT, NETWORK_ID, podManifest, TCP_PORT } from "./helpers/cni_world.ts";
import { privilegedTests } from "./helpers/sim_world.ts";
import { PTP_MISSING } from "./helpers/cni_runtime.ts";
import { waitFor } from "./helpers/wait.ts";

const privileged = privilegedTests(PTP_MISSING);
const MARK = markFor(defaultConfig(), NETWORK_ID);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const ms = (v: number) => `${v.toFixed(1)} ms`;

/** The pod's address from a successful ADD's result, without the prefix length. */
function addedIp(add: ChainOutcome): string {
  return (add.result!.ips as { address: string }[])[0].address.split("/")[0];
}

/** The kubelet's HTTP probe of a pod's /ready endpoint. */
function probeReady(w: CniWorld, ip: string) {
  return w.kubelet.probe({ host: ip, port: HTTP_PORT, timeoutMs: 2000, http: "/ready" });
}

function targetsOf(w: CniWorld, ip: string) {
  return w.datapath.store.entries().filter((e) => e.key.address === ip)
    .sort((a, b) => a.key.port - b.key.port);
}

privileged(
  "ADD after ptp registers the pod's targets and the kubelet reaches it at once",
  async () => {
    await using w = await CniWorld.create({ agent: true });
    const pod = await w.makePod("web");
    const add = await w.chain.add(pod.params);
    assert.ok(add.ok, JSON.stringify(add.error));
    const [ptp, lace] = add.runs;
    assert.deepEqual(JSON.parse(lace.stdout), JSON.parse(ptp.stdout), "prevResult passes through");
    assert.equal(lace.stderr, "");
    pod.ip = addedIp(add);
    // The pod source knows the pod without any address: only ADD can have told the agent.
    assert.equal(w.core!.cache.get(pod.uid)?.status?.podIPs?.[0]?.ip, pod.ip);
    assert.equal(JSON.stringify(podManifest("web", pod.uid)).includes(pod.ip), false);
    assert.deepEqual(targetsOf(w, pod.ip), [
      {
        key: { family: "ipv4", address: pod.ip, port: HTTP_PORT },
        value: { networkId: 7, mark: MARK },
      },
      {
        key: { family: "ipv4", address: pod.ip, port: TCP_PORT },
        value: { networkId: 7, mark: MARK },
      },
    ]);
    await w.startPodServer(pod);
    const http = await probeReady(w, pod.ip);
    assert.deepEqual(http, { result: "reached", httpStatus: 200, body: "web", mark: MARK });
    const tcp = await w.kubelet.probe({ host: pod.ip, port: TCP_PORT, timeoutMs: 2000 });
    assert.equal(tcp.result, "reached");
    const other = await w.other.probe({ host: pod.ip, port: HTTP_PORT, timeoutMs: 500, http: "/" });
    assert.notEqual(other.result, "reached", "only the mark leads into the pod's network");
    console.log(
      `  lace ADD process wall time (chained after ptp): ${ms(lace.ms)}; ptp: ${ms(ptp.ms)}`,
    );
  },
);

privileged("DEL removes the pod's targets, and a second DEL still succeeds", async () => {
  await using w = await CniWorld.create({ agent: true });
  const pod = await w.makePod("web");
  const add = await w.chain.add(pod.params);
  assert.ok(add.ok, JSON.stringify(add.error));
  const ip = addedIp(add);
  // The pod source still lists the pod, with no address: only the CNI view had one.
  assert.equal(targetsOf(w, ip).length, 2);
  const del = await w.chain.del(pod.params);
  assert.ok(del.ok, JSON.stringify(del.error));
  assert.deepEqual(targetsOf(w, ip), []);
  const again = await w.chain.del(pod.params);
  assert.ok(again.ok, JSON.stringify(again.error));
});

privileged(
  "CHECK passes for a registered pod and reports a target missing from the map",
  async () => {
    await using w = await CniWorld.create({ agent: true });
    const pod = await w.makePod("web");
    const add = await w.chain.add(pod.params);
    assert.ok(add.ok, JSON.stringify(add.error));
    const ip = addedIp(add);
    const check = await w.chain.check(pod.params);
    assert.ok(check.ok, JSON.stringify(check.error));
    w.datapath.store.remove({ family: "ipv4", address: ip, port: HTTP_PORT });
    const broken = await w.chain.check(pod.params);
    assert.equal(broken.ok, false);
    assert.equal(broken.error?.code, 100);
    assert.match(
      broken.error!.msg,
      new RegExp(`${ip.replaceAll(".", "\\.")}:${HTTP_PORT} is not in the probe map`),
    );
  },
);

privileged(
  "ADD succeeds when the agent is down, and when it does not answer within the timeout",
  async () => {
    await using w = await CniWorld.create({ agent: false, timeout: "300ms" });
    const down = await w.makePod("down");
    const first = await w.chain.add(down.params);
    assert.ok(first.ok, JSON.stringify(first.error));
    assert.deepEqual(JSON.parse(first.runs[1].stdout), JSON.parse(first.runs[0].stdout));
    assert.match(first.runs[1].stderr, /lace-cni: ADD default\/down: .*Cannot connect/);
    // An agent that accepts and never replies.
    await Deno.mkdir(w.socket.slice(0, w.socket.lastIndexOf("/")), { recursive: true });
    const silent = Deno.listen({ transport: "unix", path: w.socket });
    const held: Deno.Conn[] = [];
    const accepting = (async () => {
      for await (const c of silent) held.push(c);
    })();
    try {
      const slow = await w.makePod("slow");
      const second = await w.chain.add(slow.params);
      assert.ok(second.ok, JSON.stringify(second.error));
      const lace = second.runs[1];
      assert.match(lace.stderr, /did not answer within 300ms/);
      assert.ok(lace.ms >= 300 && lace.ms < 3000, `lace ADD took ${lace.ms} ms`);
      console.log(`  lace ADD with a silent agent (timeout 300ms): ${ms(lace.ms)}`);
    } finally {
      silent.close();
      for (const c of held) c.close();
      await accepting.catch(() => {});
    }
  },
);

privileged("ADD-to-target latency over 100 pods and the plugin's process time", async () => {
  await using w = await CniWorld.create({ agent: true });
  const pods = Array.from({ length: 100 }, (_, i) => ({
    name: `p${i}`,
    uid: crypto.randomUUID(),
    ip: `10.71.${i >> 8}.${(i & 0xff) + 1}`,
  }));
  await Promise.all(
    pods.map((p) =>
      Deno.writeTextFile(`${w.podsDir}/${p.name}.json`, JSON.stringify(podManifest(p.name, p.uid)))
    ),
  );
  await waitFor(() => pods.every((p) => w.core!.cache.get(p.uid)), {
    message: "100 pods in the agent's cache",
  });
  const latencies: number[] = [];
  for (const [i, p] of pods.entries()) {
    const started = performance.now();
    const reply = await callAgent(w.socket, {
      v: PROTOCOL_VERSION,
      id: `lat-${i}`,
      op: "add",
      ref: { containerId: `c${i}`, ifname: "eth0" },
      attachment: {
        namespace: "default",
        name: p.name,
        uid: p.uid,
        ips: [p.ip],
        network: "blue",
        networkId: NETWORK_ID,
      },
    }, 1000);
    latencies.push(performance.now() - started);
    assert.equal(reply.ok, true, JSON.stringify(reply));
    // The reply means written: the kernel map has both targets now.
    assert.ok(w.datapath.store.get({ family: "ipv4", address: p.ip, port: HTTP_PORT }));
    assert.ok(w.datapath.store.get({ family: "ipv4", address: p.ip, port: TCP_PORT }));
  }
  const p50 = percentile(latencies, 50), p99 = percentile(latencies, 99);
  console.log(`  ADD→target in the BPF map over 100 pods: p50 ${ms(p50)}, p99 ${ms(p99)}`);
  assert.ok(p99 < 1000, "the agent answers within the plugin's default timeout");

  // The plugin process itself, as the runtime runs it (stdin, env, one socket round trip).
  const wall: number[] = [];
  for (const [i, p] of pods.slice(0, 20).entries()) {
    const prevResult = { cniVersion: "1.0.0", ips: [{ address: `${p.ip}/24` }] };
    const run = await execPlugin(
      laceCommand(),
      {
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: `proc${i}`,
        CNI_NETNS: "/var/run/netns/none",
        CNI_IFNAME: "eth0",
        CNI_PATH: "/usr/lib/cni",
        CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${p.name};K8S_POD_UID=${p.uid}`,
      },
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "n",
        type: "lace",
        socket: w.socket,
        prevResult,
      }),
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(run.stderr, "");
    wall.push(run.ms);
  }
  console.log(
    `  lace ADD process wall time (deno run main.ts, 20 runs): p50 ${
      ms(percentile(wall, 50))
    }, p99 ${ms(percentile(wall, 99))}`,
  );
});

privileged("ADD registers the pod with the real `lace agent` process over its socket", async () => {
  await using w = await CniWorld.create({ agent: false });
  const pod = await w.makePod("web");
  const agent = new Deno.Command(laceCommand()[0], {
    args: [
      ...laceCommand().slice(1),
      "agent",
      "--no-kube-api",
      `--pods-dir=${w.podsDir}`,
      `--pin-path=${w.pinPath}`,
      `--kubelet-cgroup=${w.cgroups.kubelet}`,
      "--metrics-addr=",
      "--agent-socket=",
      `--cni-socket=${w.socket}`,
      "--log-format=json",
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(agent.stderr).text();
  try {
    await waitFor(async () => {
      try {
        (await Deno.connect({ transport: "unix", path: w.socket })).close();
        return true;
      } catch {
        return false;
      }
    }, { timeout: 15_000, message: "the agent's CNI socket" });
    assert.equal(Deno.statSync(w.socket).mode! & 0o777, 0o600);
    const add = await w.chain.add(pod.params);
    assert.ok(add.ok, JSON.stringify(add.error));
    assert.equal(add.runs[1].stderr, "");
    pod.ip = addedIp(add);
    assert.equal(targetsOf(w, pod.ip).length, 2);
    await w.startPodServer(pod);
    const http = await probeReady(w, pod.ip);
    assert.deepEqual(http, { result: "reached", httpStatus: 200, body: "web", mark: MARK });
    const del = await w.chain.del(pod.params);
    assert.ok(del.ok, JSON.stringify(del.error));
    assert.deepEqual(targetsOf(w, pod.ip), []);
  } finally {
    try {
      agent.kill("SIGTERM");
    } catch {
      // It exited already: its log below says why.
    }
    await agent.status;
    const log = await stderr;
    assert.match(log, /CNI ADD registered/, log);
  }
});

Deno.test("the plugin process answers bad input with the spec's error result and no stack trace", async () => {
  const base = { CNI_CONTAINERID: "c", CNI_NETNS: "/var/run/netns/x", CNI_IFNAME: "eth0" };
  const conf = (extra: Record<string, unknown>) =>
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "n",
      type: "lace",
      socket: "/nonexistent.sock",
      ...extra,
    });
  const cases: [Record<string, string>, string, number, RegExp][] = [
    [
      { ...base, CNI_COMMAND: "ADD" },
      conf({ cniVersion: "0.2.0" }),
      1,
      /^Incompatible CNI version/,
    ],
    [
      { ...base, CNI_COMMAND: "ADD" },
      conf({ timeout: "10m" }),
      2,
      /^Unsupported value of "timeout"/,
    ],
    [{ CNI_COMMAND: "ADD" }, conf({}), 4, /CNI_CONTAINERID, CNI_NETNS/],
    [{ ...base, CNI_COMMAND: "ADD" }, "\u0000garbage", 6, /is not valid JSON/],
    [{ ...base, CNI_COMMAND: "ADD" }, conf({}), 7, /no "prevResult": .*must be chained/],
  ];
  for (const [env, stdin, code, why] of cases) {
    const run = await execPlugin(laceCommand(), env, stdin);
    assert.equal(run.code, 1, `${stdin}: exit ${run.code}`);
    const result = JSON.parse(run.stdout);
    assert.equal(result.code, code, `${stdin}: ${run.stdout}`);
    assert.match(result.msg, why, stdin);
    assert.doesNotMatch(run.stdout + run.stderr, /\s+at .*:\d+:\d+/, "no stack trace");
  }
});

Deno.test("the plugin process answers VERSION with the supported versions (wall time printed, not asserted)", async () => {
  const wall: number[] = [];
  for (let i = 0; i < 10; i++) {
    const run = await execPlugin(
      laceCommand(),
      { CNI_COMMAND: "VERSION" },
      '{"cniVersion":"1.0.0"}',
    );
    assert.equal(run.code, 0);
    assert.deepEqual(JSON.parse(run.stdout).supportedVersions, [
      "0.3.0",
      "0.3.1",
      "0.4.0",
      "1.0.0",
      "1.1.0",
    ]);
    wall.push(run.ms);
  }
  console.log(
    `  lace VERSION process wall time (10 runs): p50 ${ms(percentile(wall, 50))}, max ${
      ms(Math.max(...wall))
    }`,
  );
});
