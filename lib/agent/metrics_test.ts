import assert from "node:assert/strict";
import { type AgentSnapshot, emptySnapshot } from "./snapshot.ts";
import { Metrics } from "./metrics.ts";
import type { ReconcileReport } from "./reconcile.ts";
import { EventRecorder } from "../kube/events.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { VERSION } from "../version.ts";

const pod = { namespace: "ns", name: "p", uid: "u" };

function view(address: string, networkId: number) {
  return {
    entry: {
      key: { family: "ipv4" as const, address, port: 80 },
      value: { networkId, mark: 0x1000 | networkId << 16 },
    },
    network: `net${networkId}`,
    pod,
    container: "app",
    probe: "readiness" as const,
    handler: "tcpSocket" as const,
  };
}

const snapshot: AgentSnapshot = {
  ...emptySnapshot("exclusive"),
  targets: [view("10.0.0.1", 1), view("10.0.0.2", 1), view("10.0.0.3", 2)],
  unwritten: [{ pod, reason: "map-full", count: 1, wanted: 3, message: "full" }],
  synced: true,
  firstFullListApplied: true,
  counts: { pods: 1, targets: 3, conflicts: 0, skips: 0, mismatches: 0 },
};

function report(ops: ReconcileReport["ops"], error?: string): ReconcileReport {
  return {
    reason: "test",
    durationMs: 1,
    ops,
    allowDelete: true,
    desired: 3,
    conflicts: 0,
    skips: 0,
    ...(error ? { error } : {}),
  };
}

async function sample(metrics: Metrics, name: string): Promise<number | undefined> {
  const line = (await metrics.text()).split("\n").find((l) => l.startsWith(name + " "));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

Deno.test("Metrics.update() counts in lace_probe_targets only what is in the map", async () => {
  const metrics = new Metrics(() => undefined);
  metrics.update(
    report([{ op: "put", key: snapshot.targets[1].entry.key, ok: false, code: "E2BIG" }]),
    snapshot,
  );
  assert.equal(await sample(metrics, 'lace_probe_targets{family="ipv4",network_id="1"}'), 1);
  assert.equal(await sample(metrics, 'lace_probe_targets{family="ipv4",network_id="2"}'), 1);
  assert.equal(await sample(metrics, 'lace_probe_targets_unwritten{reason="map-full"}'), 1);
});

Deno.test("Metrics.update() leaves the target gauges alone after a reconcile that failed", async () => {
  const metrics = new Metrics(() => undefined);
  metrics.update(report([]), snapshot);
  metrics.update(report([], "reading the map failed"), { ...snapshot, targets: [] });
  assert.equal(await sample(metrics, 'lace_probe_targets{family="ipv4",network_id="1"}'), 2);
});

Deno.test("Metrics reads the probe map's entries and capacity at scrape time", async () => {
  let entries = 5;
  const metrics = new Metrics(() => undefined, () => ({ entries, capacity: 65536 }));
  assert.equal(await sample(metrics, "lace_probe_map_entries"), 5);
  entries = 7;
  assert.equal(await sample(metrics, "lace_probe_map_entries"), 7);
  assert.equal(await sample(metrics, "lace_probe_map_capacity"), 65536);
});

Deno.test("/metrics names no network, pod or address, only network ids", async () => {
  // A tenant on the node's network scrapes /metrics: it must not learn other tenants' networks.
  const metrics = new Metrics(
    () => undefined,
    () => undefined,
    undefined,
    () => [
      { networkId: 1, connects: 3n, unmatched: 1n },
      { networkId: 2, connects: 2n, unmatched: 0n },
    ],
  );
  metrics.update(report([]), snapshot);
  const text = await metrics.text();
  for (const secret of ["net1", "net2", "10.0.0.", "ns/p", '"p"', '"u"']) {
    assert.ok(!text.includes(secret), `/metrics names ${secret}`);
  }
  assert.equal(await sample(metrics, 'lace_probe_targets{family="ipv4",network_id="1"}'), 2);
  assert.equal(await sample(metrics, 'lace_probe_connects_total{network_id="1"}'), 3);
  assert.equal(await sample(metrics, 'lace_probe_unmatched_total{network_id="1"}'), 1);
});

Deno.test("Metrics.update() counts addresses of several networks as clashes under exclusive and as shared under shared, naming no network", async () => {
  const shared = {
    family: "ipv4" as const,
    address: "10.0.0.1",
    holder: { pod, network: { network: "net1", networkId: 1 } },
    peers: [],
    later: [{ pod: { ...pod, uid: "u2" }, network: { network: "net2", networkId: 2 } }],
    holderWithdrawn: false,
  };
  const metrics = new Metrics(() => undefined);
  metrics.update(report([]), { ...snapshot, sharedAddresses: [shared] });
  assert.equal(await sample(metrics, "lace_address_clashes"), 1);
  assert.equal(await sample(metrics, "lace_shared_addresses"), 0);
  metrics.update(report([]), {
    ...snapshot,
    sharedAddresses: [shared],
    addressSharing: "shared",
  });
  assert.equal(await sample(metrics, "lace_address_clashes"), 0);
  assert.equal(await sample(metrics, "lace_shared_addresses"), 1);
  const text = await metrics.text();
  for (
    const line of text.split("\n").filter((l) => /^lace_(address_clashes|shared_addresses)/.test(l))
  ) {
    assert.doesNotMatch(line, /net[12]|\{/, line);
  }
});

Deno.test("lace_events_dropped_total counts the recorder's drops by reason alone, every reason from zero", async () => {
  const metrics = new Metrics(() => undefined);
  const events = new EventRecorder({
    api: {
      createNamespacedEvent: () => new Promise(() => {}),
      patchNamespacedEvent: () => new Promise(() => {}),
    },
    nodeName: "node-a",
    namespaceQueueSize: 1,
    timers: fakeTime().timers,
    onDrop: (reason, count) => metrics.eventsDropped.inc({ reason }, count),
  });
  assert.equal(await sample(metrics, 'lace_events_dropped_total{reason="displaced"}'), 0);
  // One in flight (unanswered), one waiting, two dropped: the namespace's share is one.
  for (let i = 0; i < 4; i++) {
    events.warn({ kind: "Pod", apiVersion: "v1", namespace: "flood", name: `p-${i}` }, "R", "m");
  }
  assert.equal(await sample(metrics, 'lace_events_dropped_total{reason="namespace-full"}'), 2);
  assert.ok(!(await metrics.text()).includes("flood"), "/metrics names no namespace");
  await events.stop();
  // The one waiting and the one in flight, which stop() gives up.
  assert.equal(await sample(metrics, 'lace_events_dropped_total{reason="shutdown"}'), 2);
});

Deno.test("lace_cni_chaining_total starts every outcome at zero, so an alert's increase() sees the first failure", async () => {
  const metrics = new Metrics(() => undefined);
  for (const outcome of ["chained", "failed", "unsafe", "raced", "no-runtime-file"]) {
    assert.equal(await sample(metrics, `lace_cni_chaining_total{outcome="${outcome}"}`), 0);
  }
  metrics.cniChaining.inc({ outcome: "unsafe" });
  assert.equal(await sample(metrics, 'lace_cni_chaining_total{outcome="unsafe"}'), 1);
});

Deno.test("lace_build_info names the version, commit, build date and BPF layout it runs", async () => {
  const commit = "0123456789abcdef0123456789abcdef01234567";
  const metrics = new Metrics(() => undefined, undefined, 7, undefined, {
    commit,
    buildDate: "2026-12-06T07:00:00Z",
  });
  assert.equal(
    await sample(
      metrics,
      `lace_build_info{version="${VERSION}",commit="${commit}",` +
        `build_date="2026-12-06T07:00:00Z",bpf_abi="7"}`,
    ),
    1,
  );
  // Without the build's facts (a test, a build info that could not be read): said as unknown.
  assert.match(await new Metrics(() => undefined).text(), /lace_build_info\{[^}]*commit="unknown"/);
});
