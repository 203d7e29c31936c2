/**
 * The rules' limits on both sides (the largest accepted and the smallest
 * refused value) and each part of their compound conditions alone, with the
 * exact skip messages an operator reads.
 */
import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import type { Pod } from "../pods/pod.ts";
import { resolveConflicts } from "./conflicts.ts";
import { podPlacement } from "./placement.ts";
import { probeTargetsForPod, type Target } from "./targets.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };
const NET = { "lace.io/network": "blue", "lace.io/network-id": "7" };

function pod(
  containers: unknown[],
  over: { annotations?: Record<string, unknown>; status?: unknown } = {},
): Pod {
  return {
    metadata: { name: "web", namespace: "shop", uid: "u1", annotations: over.annotations ?? NET },
    spec: { containers },
    status: over.status ?? { phase: "Running", podIPs: [{ ip: "10.1.0.5" }, { ip: "fd00::5" }] },
  } as unknown as Pod;
}

function run(p: Pod) {
  const { targets, skipped } = probeTargetsForPod(p, OPTS);
  return {
    keys: targets.map((t) => keyId(t.key)).sort(),
    skips: skipped.map((s) => `${s.reason}: ${s.message}`),
    targets,
  };
}

const tcp = (port: unknown, extra: Record<string, unknown> = {}) => ({
  name: "app",
  readinessProbe: { tcpSocket: { port, ...extra } },
});

Deno.test("network id annotations 1 and 65535 are accepted, 0 and 65536 refused", () => {
  for (const id of ["1", "65535"]) {
    const { targets } = run(pod([tcp(80)], { annotations: { ...NET, "lace.io/network-id": id } }));
    assert.equal(targets[0]?.networkId, Number(id), id);
  }
  for (const id of ["0", "65536", "123456", "+7", "7 "]) {
    const r = run(pod([tcp(80)], { annotations: { ...NET, "lace.io/network-id": id } }));
    assert.deepEqual(r.keys, [], id);
    assert.deepEqual(r.skips, [
      `annotation: Annotation lace.io/network-id must be a decimal number 1..65535: "${id}"`,
    ]);
  }
});

Deno.test("a network annotation without the id, or an id without a non-empty name, is refused", () => {
  const cases: [Record<string, unknown>, string][] = [
    [
      { "lace.io/network": "blue" },
      "Annotation lace.io/network-id is missing or not a string while lace.io/network is set: the pod's network is unknown",
    ],
    [
      { "lace.io/network": "blue", "lace.io/network-id": 7 },
      "Annotation lace.io/network-id is missing or not a string while lace.io/network is set: the pod's network is unknown",
    ],
    [
      { "lace.io/network-id": "7" },
      `Annotation lace.io/network is missing or empty while lace.io/network-id is "7": the pod's network is unknown`,
    ],
    [
      { "lace.io/network": "", "lace.io/network-id": "7" },
      `Annotation lace.io/network is missing or empty while lace.io/network-id is "7": the pod's network is unknown`,
    ],
    [
      { "lace.io/network": 5, "lace.io/network-id": "7" },
      `Annotation lace.io/network is missing or empty while lace.io/network-id is "7": the pod's network is unknown`,
    ],
  ];
  for (const [annotations, message] of cases) {
    assert.deepEqual(run(pod([tcp(80)], { annotations })).skips, [`annotation: ${message}`]);
  }
});

Deno.test("probe ports 1 and 65535 get targets, 0 and 65536 are refused with the port named", () => {
  assert.deepEqual(run(pod([tcp(1)])).keys, ["10.1.0.5:1", "[fd00::5]:1"]);
  assert.deepEqual(run(pod([tcp(65535)])).keys, ["10.1.0.5:65535", "[fd00::5]:65535"]);
  const refused: [unknown, string][] = [
    [0, "Probe port 0 is outside 1..65535"],
    [65536, "Probe port 65536 is outside 1..65535"],
    [8.5, "Probe port 8.5 is outside 1..65535"],
    ["65536", `Probe port 65536 ("65536") is outside 1..65535`],
    ["0", `Probe port 0 ("0") is outside 1..65535`],
  ];
  for (const [port, message] of refused) {
    assert.deepEqual(run(pod([tcp(port)])).skips, [
      `port-range: readiness probe of container "app": ${message}`,
    ]);
  }
});

Deno.test("a named port resolves in its own container, and 65536 behind a name is refused", () => {
  const named = (containerPort: unknown) => ({
    ...tcp("web"),
    ports: [{ name: "other", containerPort: 1 }, { name: "web", containerPort }],
  });
  assert.deepEqual(run(pod([named(65535)])).keys, ["10.1.0.5:65535", "[fd00::5]:65535"]);
  assert.deepEqual(run(pod([named(65536)])).skips, [
    `port-range: readiness probe of container "app": Probe port 65536 ("web") is outside 1..65535`,
  ]);
  assert.deepEqual(run(pod([named("80")])).skips, [
    `port-range: readiness probe of container "app": Probe port 80 ("web") is outside 1..65535`,
  ]);
});

Deno.test("a port string is a name unless it is all digits; an empty or missing port is malformed", () => {
  assert.deepEqual(run(pod([tcp("8080")])).keys, ["10.1.0.5:8080", "[fd00::5]:8080"]);
  for (const port of ["x80", "80x"]) {
    assert.deepEqual(run(pod([tcp(port)])).skips, [
      `named-port: readiness probe of container "app": Port name "${port}" matches no port of container "app"`,
    ]);
  }
  const unnamed = { readinessProbe: { tcpSocket: { port: "web" } } };
  assert.deepEqual(run(pod([unnamed])).skips, [
    `named-port: readiness probe of container "": Port name "web" matches no port of container ""`,
  ]);
  for (const port of ["", undefined, true]) {
    assert.deepEqual(run(pod([tcp(port)])).skips, [
      `malformed: readiness probe of container "app": Probe port is missing or invalid: ${
        String(port)
      }`,
    ]);
  }
});

Deno.test("a gRPC probe takes a number only and ignores host", () => {
  const grpc = (action: Record<string, unknown>) => ({
    name: "app",
    livenessProbe: { grpc: action },
  });
  assert.deepEqual(run(pod([grpc({ port: 9000, host: "evil" })])).keys, [
    "10.1.0.5:9000",
    "[fd00::5]:9000",
  ]);
  assert.deepEqual(run(pod([grpc({ port: "9000" })])).skips, [
    `malformed: liveness probe of container "app": gRPC port must be a number: 9000`,
  ]);
});

Deno.test("an empty or null host means every pod IP; any other host must be one of them", () => {
  for (const host of ["", null]) {
    assert.deepEqual(run(pod([tcp(80, { host })])).keys, ["10.1.0.5:80", "[fd00::5]:80"]);
  }
  assert.deepEqual(run(pod([tcp(80, { host: "FD00:0::5" })])).keys, ["[fd00::5]:80"]);
  for (const host of [5, "10.1.0.6", "web.local"]) {
    assert.deepEqual(run(pod([tcp(80, { host })])).skips, [
      `host: readiness probe of container "app" sets host ${
        JSON.stringify(host)
      }, which is not one of the pod's IPs: the kubelet connects there, so Lace does not redirect it`,
    ]);
  }
});

Deno.test("a host on a pod without addresses is neither a target nor a skip", () => {
  const r = run(pod([tcp(80, { host: "10.1.0.5" })], { status: { phase: "Running" } }));
  assert.deepEqual([r.keys, r.skips], [[], []]);
});

Deno.test("a null probe is absent, a non-object probe malformed, and exec wins over other handlers", () => {
  assert.deepEqual(run(pod([{ name: "app", readinessProbe: null }])).skips, []);
  assert.deepEqual(run(pod([{ name: "app", readinessProbe: 5 }])).skips, [
    `malformed: readinessProbe of container "app" is not an object`,
  ]);
  const both = (exec: unknown) => ({
    name: "app",
    readinessProbe: { exec, tcpSocket: { port: 80 } },
  });
  assert.deepEqual(run(pod([both({ command: ["true"] })])).keys, []);
  assert.deepEqual(run(pod([both(null)])).keys, ["10.1.0.5:80", "[fd00::5]:80"]);
});

Deno.test("an httpGet target carries its path and scheme, defaulting to / and HTTP; tcpSocket none", () => {
  const http = (action: Record<string, unknown>) => ({
    name: "app",
    readinessProbe: { httpGet: { port: 80, ...action } },
  });
  assert.deepEqual(run(pod([http({})])).targets[0].http, { path: "/", scheme: "HTTP" });
  assert.deepEqual(
    run(pod([http({ path: "/ready", scheme: "HTTPS" })])).targets[0].http,
    { path: "/ready", scheme: "HTTPS" },
  );
  assert.equal(run(pod([tcp(80)])).targets[0].http, undefined);
});

Deno.test("podIP is used only when podIPs is absent or empty, and an empty podIP is no address", () => {
  const status = (s: Record<string, unknown>) => ({ status: { phase: "Running", ...s } });
  assert.deepEqual(run(pod([tcp(80)], status({ podIPs: [], podIP: "10.1.0.9" }))).keys, [
    "10.1.0.9:80",
  ]);
  assert.deepEqual(
    run(pod([tcp(80)], status({ podIPs: [{ ip: "10.1.0.8" }], podIP: "10.1.0.9" }))).keys,
    ["10.1.0.8:80"],
  );
  assert.deepEqual(run(pod([tcp(80)], status({ podIP: "" }))), {
    keys: [],
    skips: [],
    targets: [],
  });
});

Deno.test("the same pod IP written twice gives one target, and a non-string IP is named in its skip", () => {
  const r = run(
    pod([tcp(80)], {
      status: { podIPs: [{ ip: "fd00::5" }, { ip: "FD00:0::5" }, { ip: 5 }] },
    }),
  );
  assert.deepEqual(r.keys, ["[fd00::5]:80"]);
  assert.deepEqual(r.skips, ["address: Pod IP is not an IP address: 5"]);
});

function claim(uid: string, networkId: number, container = "app"): Target {
  return {
    key: { family: "ipv4", address: "10.0.0.5", port: 80 },
    networkId,
    network: `net${networkId}`,
    pod: { namespace: "ns", name: uid, uid, creationTimestamp: `2026-01-0${uid.length}T00:00:00Z` },
    container,
    probe: "readiness",
    handler: "tcpSocket",
  };
}

Deno.test("resolveConflicts() names a pod once however many of its probes claim the key", () => {
  const claims = [claim("a", 1), claim("bb", 2, "x"), claim("bb", 2, "y"), claim("ccc", 3)];
  const dropped = (policy: "fail-closed" | "older-wins") =>
    resolveConflicts(claims, policy).conflicts.map((c) => c.dropped.map((d) => d.pod.uid));
  assert.deepEqual(dropped("older-wins"), [["bb", "ccc"]]);
  assert.deepEqual(dropped("fail-closed"), [["a", "bb", "ccc"]]);
});

Deno.test("a target names its pod with defaults for a missing namespace, name and uid", () => {
  const p = pod([tcp(80)]) as unknown as { metadata: Record<string, unknown> };
  p.metadata = { annotations: NET };
  assert.deepEqual(run(p as unknown as Pod).targets[0].pod, {
    namespace: "default",
    name: "",
    uid: "",
  });
  p.metadata = { annotations: NET, namespace: 3, creationTimestamp: "2026-01-01T00:00:00Z" };
  assert.deepEqual(run(p as unknown as Pod).targets[0].pod, {
    namespace: "default",
    name: "",
    uid: "",
    creationTimestamp: "2026-01-01T00:00:00Z",
  });
});

Deno.test("a node network differing from the annotations in id alone, or in name alone, is a mismatch", () => {
  const node = { network: "blue", networkId: 7 };
  const mismatch = (annotations: Record<string, unknown>) =>
    probeTargetsForPod(pod([tcp(80)], { annotations }), OPTS, node).mismatch?.annotated;
  assert.equal(mismatch(NET), undefined);
  assert.equal(mismatch({ ...NET, "lace.io/network-id": "8" }), 'network "blue" (id 8)');
  assert.equal(mismatch({ ...NET, "lace.io/network": "red" }), 'network "red" (id 7)');
});

Deno.test("podPlacement() holds nothing for a pod without a spec, and the node's network otherwise", () => {
  assert.equal(podPlacement({ metadata: {} } as unknown as Pod, OPTS), undefined);
  assert.equal(podPlacement(null as unknown as Pod, OPTS), undefined);
  const placed = podPlacement(pod([tcp(80)]), OPTS, { network: "green", networkId: 3 });
  assert.deepEqual(placed?.network, { network: "green", networkId: 3 });
  assert.deepEqual(placed?.addresses.map((a) => a.address), ["10.1.0.5", "fd00::5"]);
});

Deno.test("a pod IP entry without an address is named as undefined, and a special address is reported once", () => {
  const r = run(
    pod([tcp(80)], { status: { podIPs: [{}, { ip: "127.0.0.1" }, { ip: "127.0.0.1" }] } }),
  );
  assert.deepEqual(r.skips.map((s) => s.split(":")[0]), ["address", "special-address"]);
  assert.equal(r.skips[0], "address: Pod IP is not an IP address: undefined");
});

Deno.test("a probe's periodSeconds of 1 is kept and 0 is left out", () => {
  const period = (periodSeconds: number) =>
    run(pod([{ name: "app", readinessProbe: { tcpSocket: { port: 80 }, periodSeconds } }]))
      .targets[0].periodSeconds;
  assert.equal(period(1), 1);
  assert.equal(period(0), undefined);
});
