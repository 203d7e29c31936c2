/**
 * `lace netcheck` against two real nodes (tests/node/node.ts and second_node.ts), Lace's agent
 * on both (the real kubelets' probes reach each network's pods by the mark, as in production):
 * the real command (main.ts netcheck, through @kubernetes/client-node) starts its agnhost and
 * iperf3 DaemonSets from the images built here, the real kubelets run the pods, and the API
 * server execs into them through each kubelet. Each pod network has its own link between the two
 * node namespaces, and every network allocates from the same ranges; the test breaks one link,
 * and then the isolation between two networks inside a node, and reads which pairs netcheck
 * reports. Then the chart's continuous netcheck on the same two nodes (netcheck_deployment.ts:
 * the runner as a Deployment, its metrics, a second runner, disabling it). Brought up once for the
 * file; prints what it measured.
 */
import assert from "node:assert/strict";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { HAND_CHAINED, installLaceOnNodes } from "./chart.ts";
import { IMAGES } from "./images.ts";
import { NETWORKS } from "./network.ts";
import { startNode } from "./node.ts";
import { joinSecondNode } from "./second_node.ts";
import { DEPLOYMENT_NAMESPACES, netcheckDeploymentSteps } from "./netcheck_deployment.ts";
import type { PathResult } from "../../lib/netcheck/checks/path_result.ts";
import { skipIf } from "../helpers/skip.ts";

const reason = await nodeUnavailableReason();
const NAMESPACE = "lace-netcheck";
const NETWORK = NETWORKS[0];
/** The network plugin's pod label (net_plugin.ts): `--networks` entries `${LABEL}=<network>`. */
const LABEL = "lace-test.io/network";
const main = new URL("../../main.ts", import.meta.url).pathname;

interface NetcheckRun {
  code: number;
  paths: PathResult[];
  summary: {
    status: string;
    nodes: string[];
    error?: string;
    isolation?: {
      leaks: number;
      matrix: { networks: string[]; cells: { tested: number; failed: number }[][] };
    };
  };
  stderr: string;
  ms: number;
}

/**
 * Runs the real `lace netcheck` against the cluster of `kubeconfig` with `extra` arguments, JSON
 * on stdout.
 */
async function netcheck(kubeconfig: string, ...extra: string[]): Promise<NetcheckRun> {
  const began = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--no-prompt",
      "--quiet",
      main,
      "netcheck",
      `--kubeconfig=${kubeconfig}`,
      `--namespace=${NAMESPACE}`,
      `--image=${IMAGES.agnhost}`,
      `--bandwidth-image=${IMAGES.iperf3}`,
      "--timeout=2s",
      "--bandwidth-time=2s",
      "--ready-timeout=120s",
      "--output=json",
      ...extra,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = Math.round(performance.now() - began);
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  let report: { paths: PathResult[]; summary: NetcheckRun["summary"] };
  try {
    report = JSON.parse(stdout);
  } catch (cause) {
    throw new Error(`netcheck exited ${out.code} without a JSON report:\n${stdout}\n${stderr}`, {
      cause,
    });
  }
  return { code: out.code, ...report, stderr, ms };
}

/** "from → to" of each path of a phase, sorted, with whether it passed. */
function pairs(run: NetcheckRun, phase: PathResult["phase"]): string[] {
  return run.paths.filter((p) => p.phase === phase)
    .map((p) => `${p.from} → ${p.to}: ${p.ok ? "ok" : p.errorClass}`)
    .sort();
}

/** What a run measured, for the test's output. */
function measured(run: NetcheckRun): string {
  const lines = [`netcheck took ${run.ms} ms, exit ${run.code}`];
  for (const p of run.paths) {
    const figure = p.bitsPerSecond !== undefined
      ? `${(p.bitsPerSecond / 1e9).toFixed(2)} Gbit/s`
      : p.ok
      ? p.message ?? "ok"
      : `${p.errorClass}: ${p.message}`;
    const network = p.network ? ` [${p.network}]` : "";
    lines.push(`  ${p.phase.padEnd(9)}${network} ${p.from} → ${p.to} ${p.durationMs} ms ${figure}`);
  }
  return lines.join("\n");
}

Deno.test({
  name:
    "lace netcheck on two real nodes: every pair passes, a broken link between them fails exactly the broken pairs, and the chart's netcheck Deployment runs rounds and leaves nothing when disabled",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const start = performance.now();
  // The namespaces of netcheck's pods: the CLI's probes, and the chart's runner and probes.
  const namespaces = [...new Set([NAMESPACE, ...DEPLOYMENT_NAMESPACES])];
  await using first = await startNode({
    cluster: { namespaceNetworks: Object.fromEntries(namespaces.map((n) => [n, NETWORK.name])) },
  });
  const firstUp = performance.now();
  await using second = await joinSecondNode(first, { network: NETWORK, namespaces });
  const secondUp = performance.now();
  await installLaceOnNodes(first, [second], ...HAND_CHAINED);
  console.log(
    `first node up in ${Math.round(firstUp - start)} ms: ${JSON.stringify(first.timings)}\n` +
      `second node up in ${Math.round(secondUp - firstUp)} ms: ` +
      `${JSON.stringify(second.timings)}\n` +
      `agents Ready on both ${Math.round(performance.now() - secondUp)} ms after helm install`,
  );
  const kubeconfig = first.controlPlane.kubeconfigPath;
  const explain = async (run: NetcheckRun) =>
    `${measured(run)}\n--- netcheck stderr ---\n${run.stderr}\n${await first.logs(
      30,
    )}\n${await second
      .logs(30)}`;
  const [a, b] = [first.name, second.name];

  await t.step(
    "every directed pair passes TCP connect, the MTU check and iperf3 bandwidth",
    async () => {
      const run = await netcheck(kubeconfig, "--mtu");
      console.log(measured(run));
      assert.equal(run.code, 0, await explain(run));
      assert.deepEqual([...run.summary.nodes].sort(), [a, b].sort());
      assert.deepEqual(pairs(run, "connect"), [`${a} → ${b}: ok`, `${b} → ${a}: ok`].sort());
      assert.deepEqual(pairs(run, "bandwidth"), [`${a} → ${b}: ok`, `${b} → ${a}: ok`].sort());
      for (const p of run.paths.filter((p) => p.phase === "bandwidth")) {
        assert.ok(p.bitsPerSecond! > 1e6, `implausible bandwidth ${p.bitsPerSecond} bit/s`);
      }
      // Payloads up to 16000 B and a 1 MiB transfer through kubelet exec, the connection's MSS read
      // by the real iperf3 image without a capability.
      assert.deepEqual(pairs(run, "mtu"), [`${a} → ${b}: ok`, `${b} → ${a}: ok`].sort());
      for (const p of run.paths.filter((p) => p.phase === "mtu")) {
        assert.ok(p.mss! > 500 && p.mss! + 40 <= p.podMtu!, `MSS ${p.mss} beside MTU ${p.podMtu}`);
      }
    },
  );

  await t.step(
    "with the pod link between the nodes down, netcheck exits 1 naming both cross-node pairs",
    async () => {
      await second.setPodLink(false);
      try {
        const run = await netcheck(kubeconfig);
        console.log(measured(run));
        assert.equal(run.code, 1, await explain(run));
        assert.equal(run.summary.status, "failed");
        assert.deepEqual(
          pairs(run, "connect"),
          [`${a} → ${b}: TIMEOUT`, `${b} → ${a}: TIMEOUT`].sort(),
          await explain(run),
        );
        assert.deepEqual(pairs(run, "bandwidth"), [], "no bandwidth run on a pair that failed");
      } finally {
        await second.setPodLink(true);
      }
    },
  );

  await t.step(
    "with one direction cut, netcheck fails exactly that pair and passes its reverse",
    async () => {
      await second.cutTowardsFirst(true);
      try {
        const run = await netcheck(kubeconfig);
        console.log(measured(run));
        assert.equal(run.code, 1, await explain(run));
        assert.deepEqual(
          pairs(run, "connect"),
          [`${a} → ${b}: ok`, `${b} → ${a}: TIMEOUT`].sort(),
          await explain(run),
        );
        assert.deepEqual(pairs(run, "bandwidth"), [`${a} → ${b}: ok`], await explain(run));
      } finally {
        await second.cutTowardsFirst(false);
      }
    },
  );

  const [red, green] = NETWORKS;
  const networks = `--networks=${LABEL}=${red.name},${LABEL}=${green.name}`;
  const names = [`${LABEL}=${red.name}`, `${LABEL}=${green.name}`];
  const isolationArgs = [networks, "--skip-bandwidth", "--latency-samples=2"];

  await t.step(
    "--networks over two networks in the same ranges: every same-network path passes, every cross-network path is isolated",
    async () => {
      const run = await netcheck(kubeconfig, ...isolationArgs);
      console.log(measured(run));
      assert.equal(run.code, 0, await explain(run));
      const isolation = run.summary.isolation!;
      assert.deepEqual(isolation.matrix.networks, names);
      // Two nodes, one pod per network on each: per network 2 paths, between networks 2·2.
      assert.deepEqual(
        isolation.matrix.cells,
        [
          [{ tested: 2, failed: 0 }, { tested: 4, failed: 0 }],
          [{ tested: 4, failed: 0 }, { tested: 2, failed: 0 }],
        ],
        await explain(run),
      );
      assert.equal(isolation.leaks, 0);
      assert.deepEqual(
        pairs(run, "connect"),
        [`${a} → ${b}: ok`, `${a} → ${b}: ok`, `${b} → ${a}: ok`, `${b} → ${a}: ok`].sort(),
      );
    },
  );

  await t.step(
    "with the second node routing its own range between the two networks, netcheck fails with LEAK naming that pair and its networks",
    async () => {
      const undo = await second.leakBetween(red, green);
      try {
        const run = await netcheck(kubeconfig, ...isolationArgs);
        console.log(measured(run));
        assert.equal(run.code, 1, await explain(run));
        assert.equal(run.summary.isolation!.leaks, 2, await explain(run));
        const failed = run.paths.filter((p) => !p.ok);
        assert.deepEqual(
          failed.map((p) => `${p.phase} ${p.network}: ${p.from} → ${p.to} ${p.errorClass}`).sort(),
          [
            `isolation ${names[0]} → ${names[1]}: ${b} → ${b} LEAK`,
            `isolation ${names[1]} → ${names[0]}: ${b} → ${b} LEAK`,
          ].sort(),
          await explain(run),
        );
        for (const leak of failed) {
          const [fromNet, toNet] = leak.network!.split(" → ");
          assert.match(
            leak.message!,
            new RegExp(
              `^pod "${leak.fromPod}" \\(network ${fromNet}, node ${b}\\) asked \\S+ of pod ` +
                `"${leak.toPod}" \\(network ${toNet}, node ${b}\\): answered by "${leak.toPod}" itself`,
            ),
          );
        }
      } finally {
        await undo();
      }
    },
  );

  await netcheckDeploymentSteps(t, first, second);
});
