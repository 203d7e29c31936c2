import assert from "node:assert/strict";
import { assertUsable, normalisePod, PodRefusedError } from "./pod.ts";
import { SKELETON_MAX_BYTES, SKELETON_MAX_IPS } from "./skeleton.ts";

const KEYS = ["lace.io/network", "lace.io/network-id"];

/** A pod whose probe paths alone are over any cap the tests set, with these extra fields. */
function oversized(over: {
  annotations?: Record<string, unknown>;
  status?: Record<string, unknown>;
  spec?: Record<string, unknown>;
  creationTimestamp?: unknown;
} = {}) {
  return {
    metadata: {
      name: "huge",
      namespace: "tenant-a",
      uid: "u-huge",
      resourceVersion: "7",
      creationTimestamp: "creationTimestamp" in over
        ? over.creationTimestamp
        : new Date(Date.UTC(2026, 0, 1)),
      annotations: over.annotations ?? {
        "lace.io/network": "blue",
        "lace.io/network-id": "7",
        "other.io/big": "x".repeat(100_000),
      },
    },
    spec: {
      nodeName: "n1",
      ...over.spec,
      containers: [{
        name: "c",
        readinessProbe: { httpGet: { port: 8080, path: "/" + "p".repeat(20_000) } },
      }],
    },
    status: over.status ?? {
      phase: "Running",
      podIP: "10.0.0.5",
      podIPs: [{ ip: "10.0.0.5" }, { ip: "fd00::0005" }],
    },
  };
}

const refuse = (input: unknown, keys: readonly string[] | undefined = KEYS) =>
  normalisePod(input, { maxBytes: 16 * 1024, annotations: keys });

Deno.test("a pod refused as too large keeps who it is and where it sits, without its probes", () => {
  const pod = refuse(oversized());
  assert.throws(() => assertUsable(pod), PodRefusedError);
  assert.deepEqual(pod, {
    metadata: {
      name: "huge",
      namespace: "tenant-a",
      uid: "u-huge",
      resourceVersion: "7",
      creationTimestamp: "2026-01-01T00:00:00.000Z",
      annotations: { "lace.io/network": "blue", "lace.io/network-id": "7" },
    },
    spec: { nodeName: "n1", containers: [] },
    status: { phase: "Running", podIPs: [{ ip: "10.0.0.5" }, { ip: "fd00::5" }] },
  });
  assert.ok(Object.isFrozen(pod.status!.podIPs![0]));
});

Deno.test("a refused pod keeps hostNetwork, and podIP when it has no podIPs", () => {
  const pod = refuse(oversized({
    spec: { hostNetwork: false },
    status: { phase: "Pending", podIP: "10.0.0.9" },
  }));
  assert.equal(pod.spec.hostNetwork, false);
  assert.deepEqual(pod.status, { phase: "Pending", podIPs: [{ ip: "10.0.0.9" }] });
  assert.equal(refuse(oversized({ spec: { hostNetwork: "yes" } })).spec.hostNetwork, undefined);
});

Deno.test("a refused pod's skeleton drops junk addresses and keeps at most SKELETON_MAX_IPS", () => {
  const ips = [
    { ip: "not an address" },
    { ip: 42 },
    "10.0.0.1",
    { ip: "1".repeat(100_000) },
    { ip: "10.0.0.2" },
    { ip: "10.0.0.2" },
    ...Array.from({ length: 1000 }, (_, i) => ({ ip: `10.1.${i >> 8}.${i & 255}` })),
  ];
  const pod = refuse(oversized({ status: { phase: "Running", podIPs: ips } }));
  const kept = pod.status!.podIPs!.map((p) => p.ip);
  assert.deepEqual(kept, ["10.0.0.1", "10.0.0.2", "10.1.0.0", "10.1.0.1"]);
  assert.equal(kept.length, SKELETON_MAX_IPS);
});

Deno.test("a refused pod's invalid network annotations read as a network nobody can name", () => {
  for (
    const annotations of [
      { "lace.io/network": "blue net", "lace.io/network-id": "7" },
      { "lace.io/network": "b".repeat(254), "lace.io/network-id": "7" },
      { "lace.io/network": "blue", "lace.io/network-id": { deep: "7" } },
    ]
  ) {
    const pod = refuse(oversized({ annotations }));
    const kept = pod.metadata.annotations!;
    assert.ok(
      kept["lace.io/network"] === "" || kept["lace.io/network-id"] === "",
      JSON.stringify(kept).slice(0, 100),
    );
  }
  // Without the keys to keep, no annotation at all is kept.
  const bare = normalisePod(oversized(), { maxBytes: 16 * 1024 });
  assert.equal(bare.metadata.annotations, undefined);
});

Deno.test("a refused pod's skeleton stays within SKELETON_MAX_BYTES whatever its fields hold", () => {
  const wide = "\u{10FFFF}".length === 2 ? "\u{20000}" : "x"; // two UTF-16 units per character
  const pod = refuse(oversized({
    creationTimestamp: "t".repeat(100_000),
    annotations: {
      "lace.io/network": wide.repeat(253),
      "lace.io/network-id": wide.repeat(253),
    },
    spec: { nodeName: "n".repeat(253) },
    status: {
      phase: "P".repeat(100_000),
      podIPs: Array.from({ length: 10_000 }, (_, i) => ({
        ip: `fd00:1111:2222:3333:4444:5555:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}`,
      })),
    },
  }));
  const bytes = JSON.stringify(pod).length;
  assert.ok(bytes <= SKELETON_MAX_BYTES, `${bytes} > ${SKELETON_MAX_BYTES}`);
  assert.ok(SKELETON_MAX_BYTES < 4096, "a fraction of the 16 KiB cap");
  assert.equal(pod.metadata.creationTimestamp, undefined);
  assert.equal(pod.status!.phase, undefined);
  assert.equal(pod.status!.podIPs!.length, SKELETON_MAX_IPS);
});
