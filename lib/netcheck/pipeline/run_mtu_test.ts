import assert from "node:assert/strict";
import { summaryData, textReport } from "../report/formats.ts";
import { EXIT_FAILED } from "./run.ts";
import { probeDaemonSet } from "../cluster/manifest.ts";
import { fakeNodes } from "../../../tests/netcheck/memory_cluster.ts";
import { options, run } from "../../../tests/netcheck/run_fixture.ts";

Deno.test("--mtu fails the paths of a black hole (small payloads pass, full-size ones vanish) and only those", async () => {
  const nodes = fakeNodes(4);
  nodes[2].blackHoleAbove = 1400;
  const { exitCode, summary, outcome } = await run(nodes, { mtu: true, skipBandwidth: true });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.mtu.tested, 12);
  assert.equal(summary.mtu.failed, 6, "every path to or from the black-holed node");
  assert.deepEqual([...summary.failures.byClass], [["MTU", 6]]);
  assert.ok(
    summary.failures.items.every((r) => r.from === nodes[2].name || r.to === nodes[2].name),
  );
  assert.match(
    summary.failures.items[0].message!,
    /^a 200 B payload passes but 4000, 16000 B do not; largest through 1400 B \(pod eth0 MTU 1500\): an MTU black hole/,
  );
  assert.match(
    summary.failures.items[0].message!,
    /; the connection's MSS is 1448 B \(segments of 1488 B and more\); a 200 B UDP datagram passes but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of 85 datagrams\)$/,
  );
  assert.match(
    textReport(summary, outcome),
    /MTU: {10}12 paths, 6 passed, 6 failed \(payloads up to 16000 B both ways, a 1 MiB TCP transfer; MSS 1448 B\); full-size UDP datagrams: 6 paths through, 6 lost/,
  );
});

Deno.test("--mtu fails the paths where small UDP datagrams pass and full-size ones vanish, naming UDP and the size", async () => {
  const nodes = fakeNodes(3);
  nodes[1].udpBlackHoleAbove = 1400;
  const { exitCode, summary, outcome, cluster } = await run(nodes, {
    mtu: true,
    skipBandwidth: true,
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.deepEqual(summary.mtu, { tested: 6, passed: 2, failed: 4 });
  assert.deepEqual(summary.udpFullSize, { passed: 2, lost: 4 });
  for (const f of summary.failures.items) {
    assert.equal(f.errorClass, "MTU");
    assert.ok(f.from === nodes[1].name || f.to === nodes[1].name);
    assert.equal(f.udpDatagram, 200, "the largest datagram through, beside the pod MTU");
    assert.equal(f.udpFullSize, false);
    assert.match(
      f.message!,
      /^payloads up to 16000 B pass over TCP \(pod eth0 MTU 1500\) and a 200 B UDP datagram passes, but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of 85 datagrams\): full-size UDP datagrams are lost on this path/,
    );
  }
  assert.match(textReport(summary, outcome), /full-size UDP datagrams: 2 paths through, 4 lost/);
  const json = summaryData(summary, outcome) as { mtu: { udpFullSize: unknown } };
  assert.deepEqual(json.mtu.udpFullSize, { passed: 2, lost: 4 });
  assert.equal(cluster.violations.length, 0, cluster.violations.join());
});

Deno.test("--udp tests every path by datagram: a node that drops UDP fails its paths while TCP passes", async () => {
  const nodes = fakeNodes(3);
  nodes[1].udpBlocked = true;
  const { exitCode, summary, outcome, cluster } = await run(nodes, {
    udp: true,
    skipBandwidth: true,
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.connect.failed, 0);
  assert.deepEqual(summary.udp, { tested: 6, passed: 2, failed: 4 });
  assert.ok(summary.failures.items.every((r) => r.phase === "udp" && r.errorClass === "TIMEOUT"));
  assert.match(textReport(summary, outcome), /UDP: {10}6 paths, 2 passed, 4 failed/);
  assert.equal([...cluster.pathCounts.keys()].filter((k) => k.startsWith("udp")).length, 6);
});

Deno.test("the probe pods run netexec's UDP server only with --udp", () => {
  const container = (udp: boolean) => ((probeDaemonSet({ ...options(), udp }, "r") as {
    spec: { template: { spec: { containers: { args: string[]; ports: unknown[] }[] } } };
  }).spec.template.spec.containers[0]);
  assert.ok(container(false).args.includes("--udp-port=-1"));
  assert.equal(container(false).ports.length, 1);
  assert.ok(container(true).args.includes("--udp-port=1200"));
  assert.equal(container(true).ports.length, 2);
});
