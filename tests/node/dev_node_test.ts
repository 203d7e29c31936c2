/**
 * `scripts/dev node` as a user drives it (tests/node/dev_node.ts, run as its own process, without
 * scripts/dev's set-up step, which the real-node tests need done already): `up` prints the
 * kubeconfig and how to use it, `status` says it is up, the kubeconfig works through the real
 * client and a probed pod in a namespace of its own becomes Ready and shows in `exec lace
 * targets`, a second `up` starts nothing, and `down` leaves nothing of the node on the machine:
 * after the supervisor was killed with SIGKILL (one node), and after an ordinary `down` of two.
 * Each leftover is looked for by the node's own names: its network namespace, its cgroups in
 * every hierarchy, bpffs entries, processes naming its run directory, the run directories
 * (the node's and its control plane's), the owner record and the dev node's state.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { pathExists } from "../../lib/datapath/pins.ts";
import { OWNERS_DIR } from "../../lib/demo/leftovers.ts";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { explainFailure, waitFor } from "../helpers/wait.ts";
import { CGROUP_V1, CONTAINER_HIERARCHIES } from "./cgroups.ts";
import { type DevNodeState, KUBECONFIG, STATE, STATE_DIR } from "./dev_node.ts";
import { E2E_IMAGES } from "./e2e_images.ts";
import { isReady } from "./pod_checks.ts";
import { skipIf } from "../helpers/skip.ts";

const devNode = new URL("./dev_node.ts", import.meta.url).pathname;

async function existingDevNode(): Promise<string | undefined> {
  try {
    const state = JSON.parse(await Deno.readTextFile(STATE)) as DevNodeState;
    if (pathExists(`/proc/${state.pid}`)) {
      return `a dev node is up (supervisor pid ${state.pid}); scripts/dev node down first`;
    }
  } catch {
    // None.
  }
  return undefined;
}

const reason = (await nodeUnavailableReason()) ?? (await existingDevNode());
const NAMESPACE = "dev-node-test";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `scripts/dev node ARGS` without the set-up step: the command's own entry, as its own process. */
async function dev(...args: string[]): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--no-prompt", "--quiet", devNode, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

function describe(run: Run): string {
  return `exit ${run.code}\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}`;
}

async function supervisorLog(): Promise<string> {
  return await Deno.readTextFile(join(STATE_DIR, "supervisor.log")).catch(() => "(no log)");
}

/** `up ARGS`, asserted to succeed and to print the kubeconfig and the usage; the state after. */
async function up(...args: string[]): Promise<DevNodeState> {
  const began = performance.now();
  const run = await dev("up", ...args);
  if (run.code !== 0) {
    throw new Error(`up ${args.join(" ")} failed: ${describe(run)}\n${await supervisorLog()}`);
  }
  console.log(`up ${args.join(" ")}: ${Math.round(performance.now() - began)} ms`);
  assert.match(run.stdout, new RegExp(`kubeconfig: ${KUBECONFIG}`));
  assert.match(run.stdout, new RegExp(`export KUBECONFIG=${KUBECONFIG}`));
  assert.match(run.stdout, /scripts\/dev node exec lace targets/);
  assert.match(run.stdout, /Tear it down: scripts\/dev node down/);
  const state = JSON.parse(await Deno.readTextFile(STATE)) as DevNodeState;
  assert.equal(state.ready, true);
  assert.ok(state.name && state.dir && state.initPid, JSON.stringify(state));
  return state;
}

/** The node names and run directories of a dev node's state. */
function nodesOf(state: DevNodeState): { name: string; dir: string }[] {
  return [
    { name: state.name!, dir: state.dir! },
    ...(state.second ? [{ name: state.second.name, dir: state.second.dir }] : []),
  ];
}

/** Processes whose command line names `text` (other than this test's). */
function processesNaming(text: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      if (cmdline.includes(text)) found.push(`${entry.name}: ${cmdline.slice(0, 200)}`);
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}

function entries(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch {
    return [];
  }
}

/** Control plane directories in the temporary directory whose owner is `pid`. */
function controlPlaneDirsOf(pid: number): string[] {
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  return entries(tmp).filter((name) => name.startsWith("lace-control-plane-")).filter((name) => {
    try {
      return Deno.readTextFileSync(join(tmp, name, "owner.pid")).trim() === String(pid);
    } catch {
      return false;
    }
  }).map((name) => join(tmp, name));
}

/** Everything of the dev node of `state` still on the machine, one line each. */
async function leftovers(state: DevNodeState): Promise<string[]> {
  const left: string[] = [];
  const netns = new TextDecoder().decode(
    (await new Deno.Command("ip", { args: ["netns", "list"], stdout: "piped" }).output()).stdout,
  ).split("\n").map((line) => line.split(" ")[0]);
  for (const { name, dir } of nodesOf(state)) {
    const suffix = name.slice("lace-knode-".length);
    if (netns.includes(name)) left.push(`network namespace ${name}`);
    for (const hierarchy of CONTAINER_HIERARCHIES) {
      const cgroup = join(CGROUP_V1, hierarchy, name);
      if (pathExists(cgroup)) left.push(`cgroup ${cgroup}`);
    }
    for (const pin of entries("/sys/fs/bpf").filter((e) => e.endsWith(`-${suffix}`))) {
      left.push(`bpffs /sys/fs/bpf/${pin}`);
    }
    if (pathExists(dir)) left.push(`run directory ${dir}`);
    for (const process of processesNaming(dir)) left.push(`process ${process}`);
    for (const process of processesNaming(name)) left.push(`process ${process}`);
  }
  if (pathExists(`/proc/${state.pid}`)) left.push(`supervisor ${state.pid}`);
  for (const dir of controlPlaneDirsOf(state.pid)) left.push(`control plane directory ${dir}`);
  for (const owner of entries(OWNERS_DIR).filter((o) => o.startsWith(`${state.pid}-`))) {
    left.push(`owner record ${join(OWNERS_DIR, owner)}`);
  }
  for (const file of [STATE, KUBECONFIG]) if (pathExists(file)) left.push(`file ${file}`);
  return [...new Set(left)];
}

/** `down`, whatever state the node is in; for `finally`. */
async function downQuietly(): Promise<void> {
  const run = await dev("down");
  if (run.code !== 0) console.error(`down in cleanup failed: ${describe(run)}`);
}

/** `up ARGS`, then `body` with the node's state, then `down` whatever happened. */
async function withDevNode(args: string[], body: (state: DevNodeState) => Promise<void>) {
  try {
    await body(await up(...args));
  } finally {
    await downQuietly();
  }
}

/** A real node: started by the commands under test, whose operations outlive a test's. */
const realNode = { ignore: skipIf(reason), sanitizeOps: false, sanitizeResources: false };

/** A pod the kubelet probes (the README's example), in NAMESPACE, pinned to `node`. */
function probedPod(name: string, node: string): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "web",
        image: E2E_IMAGES.agnhost,
        imagePullPolicy: "Never",
        args: ["netexec", "--http-port=8080"],
        readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
        livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 5 },
      }],
    },
  };
}

/**
 * Through the kubeconfig `up` printed: NAMESPACE and one probed pod per node become Ready, and
 * each node's agent lists its pod in `exec [--node N] lace targets`.
 */
async function probedPodsReady(state: DevNodeState): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(KUBECONFIG);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const nodes = nodesOf(state);
  const began = performance.now();
  for (const [i, { name }] of nodes.entries()) {
    await core.createNamespacedPod({ namespace: NAMESPACE, body: probedPod(`web-${i + 1}`, name) });
  }
  for (const [i] of nodes.entries()) {
    const pod = `web-${i + 1}`;
    await explainFailure(
      waitFor(
        async () => isReady(await core.readNamespacedPod({ name: pod, namespace: NAMESPACE })),
        { timeout: 120_000, interval: 500, message: `pod ${NAMESPACE}/${pod} to be Ready` },
      ),
      async () => {
        const status = await core.readNamespacedPod({ name: pod, namespace: NAMESPACE })
          .then((p) => JSON.stringify(p.status, null, 1)).catch((e) => String(e));
        const events = await core.listNamespacedEvent({ namespace: NAMESPACE })
          .then((l) => l.items.map((e) => `${e.reason}: ${e.message}`).join("\n"))
          .catch((e) => String(e));
        return `${status}\n${events}`;
      },
    );
    const targets = await dev("exec", "--node", String(i + 1), "lace", "targets");
    assert.equal(targets.code, 0, describe(targets));
    assert.match(targets.stdout, new RegExp(`${NAMESPACE}/${pod}\\b`), describe(targets));
  }
  console.log(`${nodes.length} probed pod(s) Ready in ${Math.round(performance.now() - began)} ms`);
}

Deno.test({
  name: "dev node: up, a probed pod Ready through its kubeconfig, a second up starts nothing, " +
    "and down after the supervisor was killed leaves nothing",
  ...realNode,
  fn: () =>
    withDevNode([], async (state) => {
      const status = await dev("status");
      assert.equal(status.code, 0, describe(status));
      assert.equal(status.stdout.trim(), `up: ${state.name}, kubeconfig ${KUBECONFIG}`);

      await probedPodsReady(state);

      // The same shape again: nothing started, the same supervisor; another shape: refused.
      const again = await dev("up");
      assert.equal(again.code, 0, describe(again));
      assert.match(again.stderr, /already up \(1 node, supervisor pid \d+\); nothing started/);
      assert.match(again.stdout, new RegExp(`kubeconfig: ${KUBECONFIG}`));
      const other = await dev("up", "--nodes", "2");
      assert.equal(other.code, 1, describe(other));
      assert.match(other.stderr, /Refused: a dev node is already up \(1 node, .*down first/);
      const after = JSON.parse(await Deno.readTextFile(STATE)) as DevNodeState;
      assert.equal(after.pid, state.pid);
      assert.equal(after.name, state.name);
      assert.equal((await dev("status")).code, 0);

      // The crash: the supervisor killed outright; the node's processes die with it.
      Deno.kill(state.pid, "SIGKILL");
      await waitFor(() => !pathExists(`/proc/${state.pid}`), {
        timeout: 10_000,
        interval: 100,
        message: `the supervisor ${state.pid} to exit`,
      });
      const crashed = await dev("status");
      assert.equal(crashed.code, 1, describe(crashed));
      assert.equal(crashed.stdout.trim(), "down");
      assert.ok((await leftovers(state)).length > 0, "the killed supervisor left nothing to sweep");

      const down = await dev("down");
      assert.equal(down.code, 0, describe(down));
      assert.match(down.stderr, /The dev node is down/);
      assert.deepEqual(await leftovers(state), []);
    }),
});

Deno.test({
  name: "dev node --nodes 2: a probed pod Ready on each node, exec --node 2, and down takes both " +
    "down, leaving nothing",
  ...realNode,
  fn: () =>
    withDevNode(["--nodes", "2"], async (state) => {
      assert.ok(state.second, JSON.stringify(state));
      assert.match((await dev("up")).stderr, /Refused: a dev node is already up \(2 nodes/);
      const status = await dev("status");
      assert.equal(status.code, 0, describe(status));
      assert.equal(
        status.stdout.trim(),
        `up: ${state.name} and ${state.second.name}, kubeconfig ${KUBECONFIG}`,
      );

      await probedPodsReady(state);

      const down = await dev("down");
      assert.equal(down.code, 0, describe(down));
      // The supervisor tore both nodes down itself: down did not have to kill it and sweep.
      assert.doesNotMatch(down.stderr, /did not stop/, describe(down));
      assert.deepEqual(await leftovers(state), []);
      assert.equal((await dev("status")).stdout.trim(), "down");
    }),
});
