/**
 * `lace netcheck` against two real nodes (tests/node/node.ts and second_node.ts): the real
 * command (main.ts netcheck, through @kubernetes/client-node) starts its agnhost and iperf3
 * DaemonSet from the images built here, the real kubelets run the pods, and the API server
 * execs into them through each kubelet. The nodes' pods reach each other over a pod link
 * between the two node namespaces; the test breaks that link and reads which pairs netcheck
 * reports. Brought up once for the file; prints what it measured.
 */
import assert from "node:assert/strict";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { IMAGES } from "./images.ts";
import { NETWORKS } from "./network.ts";
import { startNode } from "./node.ts";
import { joinSecondNode } from "./second_node.ts";
import type { PathResult } from "../../lib/netcheck/summary.ts";

const reason = await nodeUnavailableReason();
const NAMESPACE = "lace-netcheck";
const NETWORK = NETWORKS[0];
const main = new URL("../../main.ts", import.meta.url).pathname;

interface NetcheckRun {
  code: number;
  paths: PathResult[];
  summary: { status: string; nodes: string[]; error?: string };
  stderr: string;
  ms: number;
}

/** Runs the real `lace netcheck` against the cluster of `kubeconfig`, JSON on stdout. */
async function netcheck(kubeconfig: string): Promise<NetcheckRun> {
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
      ? "ok"
      : `${p.errorClass}: ${p.message}`;
    lines.push(`  ${p.phase.padEnd(9)} ${p.from} → ${p.to} ${p.durationMs} ms ${figure}`);
  }
  return lines.join("\n");
}

Deno.test({
  name:
    "lace netcheck on two real nodes: every pair passes, and a broken link between them fails exactly the broken pairs",
  ignore: reason !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const start = performance.now();
  await using first = await startNode({
    cluster: { namespaceNetworks: { [NAMESPACE]: NETWORK.name } },
  });
  const firstUp = performance.now();
  await using second = await joinSecondNode(first, { network: NETWORK, namespaces: [NAMESPACE] });
  console.log(
    `first node up in ${Math.round(firstUp - start)} ms: ${JSON.stringify(first.timings)}\n` +
      `second node up in ${Math.round(performance.now() - firstUp)} ms: ` +
      JSON.stringify(second.timings),
  );
  const kubeconfig = first.controlPlane.kubeconfigPath;
  const explain = async (run: NetcheckRun) =>
    `${measured(run)}\n--- netcheck stderr ---\n${run.stderr}\n${await first.logs(
      30,
    )}\n${await second
      .logs(30)}`;
  const [a, b] = [first.name, second.name];

  await t.step("every directed pair passes TCP connect and iperf3 bandwidth", async () => {
    const run = await netcheck(kubeconfig);
    console.log(measured(run));
    assert.equal(run.code, 0, await explain(run));
    assert.deepEqual([...run.summary.nodes].sort(), [a, b].sort());
    assert.deepEqual(pairs(run, "connect"), [`${a} → ${b}: ok`, `${b} → ${a}: ok`].sort());
    assert.deepEqual(pairs(run, "bandwidth"), [`${a} → ${b}: ok`, `${b} → ${a}: ok`].sort());
    for (const p of run.paths.filter((p) => p.phase === "bandwidth")) {
      assert.ok(p.bitsPerSecond! > 1e6, `implausible bandwidth ${p.bitsPerSecond} bit/s`);
    }
  });

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
});
