import assert from "node:assert/strict";
import type { NetcheckOptions } from "../options.ts";
import { textReport } from "../report/formats.ts";
import { EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, runChecks } from "./run.ts";
import {
  fakeNodes,
  MemoryCluster,
  type MemoryClusterOptions,
} from "../../../tests/netcheck/memory_cluster.ts";
import { assertCleanedUp, options, quiet } from "../../../tests/netcheck/run_fixture.ts";

/** A run with --networks on a cluster where the namespaces tenant-a and tenant-b exist. */
async function runNetworks(
  networks: string[],
  sim: MemoryClusterOptions = {},
  over: Partial<NetcheckOptions> = {},
) {
  const cluster = new MemoryCluster(fakeNodes(4), { recordPaths: true, ...sim });
  for (const ns of ["tenant-a", "tenant-b"]) await cluster.ensureNamespace(ns);
  const applied: Record<string, unknown>[] = [];
  const apply = cluster.applyDaemonSet.bind(cluster);
  cluster.applyDaemonSet = (ns, manifest) => {
    applied.push(manifest);
    return apply(ns, manifest);
  };
  const result = await runChecks(options({ networks, skipBandwidth: true, ...over }), {
    cluster,
    progress: quiet,
    sinks: [],
    runId: "iso1",
    pollMs: 1,
  });
  return { cluster, applied, ...result };
}

Deno.test("--networks: two networks reusing every address pass, with the matrix reported", async () => {
  const { cluster, exitCode, summary, outcome, applied } = await runNetworks([
    "tenant-a",
    "tenant-b",
  ]);
  assert.equal(exitCode, EXIT_PASSED, textReport(summary, outcome));
  assert.deepEqual(
    applied.map((m) => (m.metadata as { namespace: string }).namespace),
    ["tenant-a", "tenant-b"],
  );
  // Same-network connect and latency within each network, 4 nodes each.
  assert.equal(summary.connect.passed, 24);
  assert.equal(summary.latency.passed, 24);
  // Every pod of one network to every pod of the other, same node included.
  assert.equal(summary.isolation.tested, 32);
  assert.equal(summary.isolation.passed, 32);
  assert.deepEqual(summary.networks!.toJSON().cells, [
    [{ tested: 12, failed: 0 }, { tested: 16, failed: 0 }],
    [{ tested: 16, failed: 0 }, { tested: 12, failed: 0 }],
  ]);
  assert.match(
    textReport(summary, outcome),
    /Isolation: {4}32 cross-network paths, 32 isolated, 0 failed \(0 answered by the other network's pod\)\n.*\n {2}from\/to +tenant-a +tenant-b\n {2}tenant-a +12\/12 pass +16\/16 isolated\n {2}tenant-b +16\/16 isolated +12\/12 pass\n/,
  );
  assertCleanedUp(cluster);
});

Deno.test("--networks: one leaking direction fails the run naming the pair and the networks", async () => {
  const { cluster, exitCode, summary, outcome } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
    leaks: [["n0", "n1"]],
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.isolation.failed, 16);
  assert.equal(summary.networks!.leaks, 16);
  assert.deepEqual(summary.networks!.toJSON().cells[1][0], { tested: 16, failed: 0 });
  assert.deepEqual([...summary.failures.byClass], [["LEAK", 16]]);
  const leak = summary.failures.items[0];
  assert.equal(leak.network, "tenant-a → tenant-b");
  assert.match(
    leak.message!,
    /^pod "lace-netcheck-iso1-n0-node-\d+" \(network tenant-a, node node-\d+\) asked 10\.0\.\d+\.3 of pod "lace-netcheck-iso1-n1-node-\d+" \(network tenant-b, node node-\d+\): answered by "lace-netcheck-iso1-n1-node-\d+" itself; a route or bridge joins/,
  );
  assert.match(
    textReport(summary, outcome),
    /isolation \[tenant-a → tenant-b\] node-\d+ → node-\d+ {2}LEAK/,
  );
  assertCleanedUp(cluster);
});

Deno.test("--networks: distinct addresses that nobody answers across networks are isolated", async () => {
  const { exitCode, summary } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.isolation.passed, 32);
});

/**
 * A cross-network request from network n0 to n1's address 10.0.<i>.3 (nobody there in n0)
 * answered by `name(i)`: as if a pod outside netcheck, or through a leak another pod, held it.
 */
function answeredAcross(name: (i: number) => string): MemoryClusterOptions["rewrite"] {
  return (answer, { pod, command }) => {
    const url = command.filter((a) => a.startsWith("http://"));
    const target = /^http:\/\/10\.0\.(\d+)\.3:/.exec(url[0] ?? "");
    if (url.length !== 1 || !pod.includes("-n0-") || !target) return answer;
    return {
      exitCode: 0,
      stdout: `${name(Number(target[1]))}\nLACE 200 1 0.000100 0.000100 0.000200\n`,
      stderr: "",
    };
  };
}

Deno.test("--networks: a pod that is none of netcheck's answering across networks leaves isolation unverified", async () => {
  const { exitCode, summary } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
    rewrite: answeredAcross(() => "tenant-web-7f9c"),
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.deepEqual([...summary.failures.byClass], [["UNVERIFIED", 16]]);
  assert.match(summary.failures.items[0].message!, /"tenant-web-7f9c", which is no probe pod/);
  // Failed in the matrix, but no leak shown.
  assert.equal(summary.networks!.leaks, 0);
  assert.deepEqual(summary.networks!.toJSON().cells[0][1], { tested: 16, failed: 16 });
});

Deno.test("--networks: another network's probe pod than the target answering is a leak", async () => {
  const { exitCode, summary } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
    rewrite: answeredAcross((i) =>
      `lace-netcheck-iso1-n1-node-${String((i + 1) % 4).padStart(4, "0")}`
    ),
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.deepEqual([...summary.failures.byClass], [["LEAK", 16]]);
  assert.match(summary.failures.items[0].message!, /the probe pod of network tenant-b there/);
});

Deno.test("--networks with key=value labels: DaemonSets in --namespace, the label on the pods", async () => {
  const { exitCode, applied } = await runNetworks([
    "lace-test.io/network=blue",
    "lace-test.io/network=red",
  ]);
  assert.equal(exitCode, EXIT_PASSED);
  const podLabels = applied.map((m) =>
    (m.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata
      .labels["lace-test.io/network"]
  );
  assert.deepEqual(podLabels, ["blue", "red"]);
  assert.deepEqual(
    applied.map((m) => (m.metadata as { namespace: string }).namespace),
    ["lace-system", "lace-system"],
  );
  // The plugin's label is on the pods only: the DaemonSets' selectors differ by network.
  const selectors = applied.map((m) => JSON.stringify((m.spec as { selector: unknown }).selector));
  assert.notEqual(selectors[0], selectors[1]);
  assert.ok(!selectors[0].includes("blue"));
});

Deno.test("--networks naming a namespace that does not exist stops the setup and leaves nothing", async () => {
  const { cluster, exitCode, outcome } = await runNetworks(["tenant-a", "tenant-x"]);
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(
    outcome.error!,
    /network "tenant-x" in namespace "tenant-x".*netcheck never creates them/,
  );
  assert.ok(!cluster.namespaces.has("tenant-x"));
  assertCleanedUp(cluster);
});

Deno.test("--networks: latency, MTU and bandwidth paths name their network, as connect paths do", async () => {
  const cluster = new MemoryCluster(fakeNodes(3), { recordPaths: true });
  for (const ns of ["tenant-a", "tenant-b"]) await cluster.ensureNamespace(ns);
  const networksOf = new Map<string, Set<string | undefined>>();
  const { exitCode, summary, outcome } = await runChecks(
    options({ networks: ["tenant-a", "tenant-b"], mtu: true }),
    {
      cluster,
      progress: quiet,
      sinks: [{
        path: (p) =>
          void networksOf.set(p.phase, (networksOf.get(p.phase) ?? new Set()).add(p.network)),
        finish: () => Promise.resolve(),
      }],
      pollMs: 1,
      retryDelayMs: 1,
    },
  );
  assert.equal(exitCode, EXIT_PASSED, textReport(summary, outcome));
  for (const phase of ["connect", "latency", "mtu", "bandwidth"]) {
    assert.deepEqual([...networksOf.get(phase) ?? []].sort(), ["tenant-a", "tenant-b"], phase);
  }
});
