import assert from "node:assert/strict";
import type { Container, Pod } from "../pods/pod.ts";
import { canonicalAddress, keyId } from "../datapath/probe_map.ts";
import { SeededRandom } from "../../tests/helpers/property.ts";
import { podPlacement, probeTargetsForPod, type Skip, type Target } from "./targets.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };

function pod(over: {
  containers?: Container[];
  initContainers?: Container[];
  annotations?: Record<string, string> | null;
  ips?: string[];
  podIP?: string;
  phase?: string;
  hostNetwork?: boolean;
  deletionTimestamp?: string;
}): Pod {
  const p: Pod = {
    metadata: {
      name: "web",
      namespace: "shop",
      uid: "u1",
      creationTimestamp: "2026-01-01T00:00:00Z",
      annotations: over.annotations === null
        ? undefined
        : over.annotations ?? { "lace.io/network": "blue", "lace.io/network-id": "7" },
    },
    spec: {
      containers: over.containers ??
        [{ name: "app", readinessProbe: { httpGet: { port: 8080, path: "/ready" } } }],
    },
    status: { phase: over.phase ?? "Running" },
  };
  if (over.initContainers) p.spec.initContainers = over.initContainers;
  if (over.hostNetwork) p.spec.hostNetwork = true;
  if (over.deletionTimestamp) p.metadata.deletionTimestamp = over.deletionTimestamp;
  if (over.podIP) p.status!.podIP = over.podIP;
  const ips = over.ips ?? (over.podIP ? undefined : ["10.1.0.5"]);
  if (ips) p.status!.podIPs = ips.map((ip) => ({ ip }));
  return p;
}

function keys(targets: Target[]): string[] {
  return targets.map((t) => keyId(t.key)).sort();
}

function reasons(skipped: Skip[]): string[] {
  return skipped.map((s) => s.reason);
}

interface Case {
  name: string;
  pod: Pod;
  keys: string[];
  skips?: string[];
}

const CASES: Case[] = [
  { name: "an httpGet readiness probe gets a target", pod: pod({}), keys: ["10.1.0.5:8080"] },
  {
    name: "liveness, readiness and startup probes each get a target",
    pod: pod({
      containers: [{
        name: "app",
        livenessProbe: { httpGet: { port: 1 } },
        readinessProbe: { tcpSocket: { port: 2 } },
        startupProbe: { grpc: { port: 3 } },
      }],
    }),
    keys: ["10.1.0.5:1", "10.1.0.5:2", "10.1.0.5:3"],
  },
  {
    name: "an exec probe needs no target",
    pod: pod({ containers: [{ name: "app", livenessProbe: { exec: { command: ["true"] } } }] }),
    keys: [],
  },
  {
    name: "a restartable init container (sidecar) gets targets",
    pod: pod({
      containers: [],
      initContainers: [{
        name: "proxy",
        restartPolicy: "Always",
        readinessProbe: { tcpSocket: { port: 15021 } },
      }],
    }),
    keys: ["10.1.0.5:15021"],
  },
  {
    name: "an ordinary init container gets no target",
    pod: pod({
      containers: [],
      initContainers: [{ name: "setup", readinessProbe: { tcpSocket: { port: 9 } } }],
    }),
    keys: [],
  },
  {
    name: "a named port resolves against the container's own ports",
    pod: pod({
      containers: [{
        name: "app",
        ports: [{ name: "http", containerPort: 8081 }],
        livenessProbe: { httpGet: { port: "http" } },
        readinessProbe: { tcpSocket: { port: "http" } },
      }],
    }),
    keys: ["10.1.0.5:8081"],
  },
  {
    name: "a port name of another container does not resolve",
    pod: pod({
      containers: [
        { name: "a", ports: [{ name: "metrics", containerPort: 9090 }] },
        { name: "b", livenessProbe: { httpGet: { port: "metrics" } } },
      ],
    }),
    keys: [],
    skips: ["named-port"],
  },
  {
    name: "a numeric string port that names no port is used as a number, as the kubelet does",
    pod: pod({ containers: [{ name: "app", livenessProbe: { tcpSocket: { port: "8443" } } }] }),
    keys: ["10.1.0.5:8443"],
  },
  {
    name: "a port outside 1..65535 is skipped",
    pod: pod({
      containers: [{
        name: "app",
        livenessProbe: { tcpSocket: { port: 0 } },
        readinessProbe: { tcpSocket: { port: 65536 } },
        startupProbe: { grpc: { port: -1 } },
      }],
    }),
    keys: [],
    skips: ["port-range", "port-range", "port-range"],
  },
  {
    name: "a named port whose containerPort is out of range is skipped",
    pod: pod({
      containers: [{
        name: "app",
        ports: [{ name: "bad", containerPort: 70000 }],
        livenessProbe: { tcpSocket: { port: "bad" } },
      }],
    }),
    keys: [],
    skips: ["port-range"],
  },
  {
    name: "every pod IP gets a target, IPv4 and IPv6, canonicalised",
    pod: pod({ ips: ["10.1.0.5", "FD00:0:0::0A"] }),
    keys: ["10.1.0.5:8080", "[fd00::a]:8080"],
  },
  {
    name: "podIP is used when podIPs is absent",
    pod: pod({ podIP: "10.1.0.9" }),
    keys: ["10.1.0.9:8080"],
  },
  { name: "a pod without an IP gets nothing yet", pod: pod({ ips: [] }), keys: [] },
  {
    name: "a pod without network annotations is on the default network and gets nothing",
    pod: pod({ annotations: null }),
    keys: [],
  },
  {
    name: "a network id that is not decimal is skipped",
    pod: pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "0x7" } }),
    keys: [],
    skips: ["annotation"],
  },
  {
    name: "a network id out of 1..65535 is skipped",
    pod: pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "65536" } }),
    keys: [],
    skips: ["annotation"],
  },
  {
    name: "a network name without an id is skipped",
    pod: pod({ annotations: { "lace.io/network": "blue" } }),
    keys: [],
    skips: ["annotation"],
  },
  { name: "a hostNetwork pod gets nothing", pod: pod({ hostNetwork: true }), keys: [] },
  { name: "a Succeeded pod gets nothing", pod: pod({ phase: "Succeeded" }), keys: [] },
  { name: "a Failed pod gets nothing", pod: pod({ phase: "Failed" }), keys: [] },
  {
    name: "a terminating pod keeps its targets while the kubelet still probes it",
    pod: pod({ deletionTimestamp: "2026-01-02T00:00:00Z" }),
    keys: ["10.1.0.5:8080"],
  },
  {
    name: "a probe host that is not the pod's IP gets no target (SSRF)",
    pod: pod({
      containers: [{
        name: "app",
        livenessProbe: { httpGet: { host: "10.1.0.6", port: 80 } },
        readinessProbe: { tcpSocket: { host: "db.example", port: 5432 } },
      }],
    }),
    keys: [],
    skips: ["host", "host"],
  },
  {
    name: "a probe host equal to one of the pod's IPs targets only that IP",
    pod: pod({
      ips: ["10.1.0.5", "fd00::5"],
      containers: [{ name: "app", livenessProbe: { httpGet: { host: "FD00::5", port: 80 } } }],
    }),
    keys: ["[fd00::5]:80"],
  },
  {
    name: "identical targets within a pod appear once",
    pod: pod({
      containers: [
        { name: "a", livenessProbe: { tcpSocket: { port: 80 } } },
        { name: "b", readinessProbe: { httpGet: { port: 80 } } },
      ],
    }),
    keys: ["10.1.0.5:80"],
  },
  {
    name: "loopback, link-local, unspecified, multicast and broadcast pod IPs never become targets",
    pod: pod({
      ips: [
        "127.0.0.1",
        "::1",
        "169.254.169.254",
        "fe80::1",
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "ff02::1",
        "255.255.255.255",
        "::ffff:169.254.0.7",
        "10.1.0.5",
      ],
    }),
    keys: ["10.1.0.5:8080"],
    skips: Array(10).fill("special-address"),
  },
  {
    name: "an IPv4-mapped loopback podIP is judged as the IPv4 address it maps",
    pod: pod({ podIP: "::ffff:127.0.0.1" }),
    keys: [],
    skips: ["special-address"],
  },
  {
    name: "an invalid pod IP is skipped and the valid ones are used",
    pod: pod({ ips: ["10.1.0.5", "not-an-ip"] }),
    keys: ["10.1.0.5:8080"],
    skips: ["address"],
  },
];

for (const c of CASES) {
  Deno.test(`probeTargetsForPod(): ${c.name}`, () => {
    const { targets, skipped } = probeTargetsForPod(c.pod, OPTS);
    assert.deepEqual(keys(targets), [...c.keys].sort());
    assert.deepEqual(reasons(skipped), c.skips ?? []);
  });
}

Deno.test("probeTargetsForPod() describes a target with its network, pod and probe", () => {
  const { targets } = probeTargetsForPod(pod({}), OPTS);
  assert.deepEqual(targets, [{
    key: { family: "ipv4", address: "10.1.0.5", port: 8080 },
    networkId: 7,
    network: "blue",
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    container: "app",
    probe: "readiness",
    handler: "httpGet",
    http: { path: "/ready", scheme: "HTTP" },
  }]);
});

Deno.test("probeTargetsForPod() names the pod, container and probe of a skip", () => {
  const p = pod({ containers: [{ name: "app", startupProbe: { tcpSocket: { port: "nope" } } }] });
  const [skip] = probeTargetsForPod(p, OPTS).skipped;
  assert.equal(skip.pod.uid, "u1");
  assert.equal(skip.container, "app");
  assert.equal(skip.probe, "startup");
  assert.match(skip.message, /"nope"/);
});

Deno.test("probeTargetsForPod() uses configured annotation keys", () => {
  const p = pod({ annotations: { "x.io/net": "red", "x.io/id": "12" } });
  const { targets } = probeTargetsForPod(p, {
    networkAnnotation: "x.io/net",
    networkIdAnnotation: "x.io/id",
  });
  assert.equal(targets[0].networkId, 12);
  assert.equal(targets[0].network, "red");
});

function generatedPod(rand: () => number): unknown {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const junk = [undefined, null, 0, -1, "", "x", [], {}, true, 1.5, "1e3", NaN];
  // Mostly well-formed values, with junk mixed in at every level.
  const pj = (xs: unknown[]): unknown => rand() < 0.08 ? pick(junk) : pick(xs);
  const port = () => pj([80, 0, 65535, 65536, -3, 8.5, "http", "9000", ""]);
  const host = () => pj([undefined, "", "10.0.0.1", "fd00::1", "evil"]);
  const probe = () =>
    pj([
      undefined,
      { httpGet: { port: port(), host: host(), path: pick([undefined, "/x", 3]) } },
      { tcpSocket: { port: port(), host: host() } },
      { grpc: { port: port() } },
      { exec: { command: ["x"] } },
      { httpGet: null, tcpSocket: { port: port() } },
    ]);
  const container = () =>
    pj([
      {
        name: pick(["a", "b", "", undefined]),
        ports: pick([undefined, [], [{ name: "http", containerPort: port() }], "x", [null]]),
        livenessProbe: probe(),
        readinessProbe: probe(),
        startupProbe: probe(),
        restartPolicy: pick([undefined, "Always", "Never"]),
      },
    ]);
  const list = <T>(f: () => T) => Array.from({ length: Math.floor(rand() * 4) }, f);
  const ip = () =>
    pj([
      "10.0.0.1",
      "10.0.0.2",
      "fd00::1",
      "FD00:0::2",
      "::ffff:10.0.0.3",
      "300.1.1.1",
      "fe80::1%eth0",
    ]);
  return pj([
    {
      metadata: pj([
        {
          name: "p",
          namespace: pick(["ns", undefined]),
          uid: pick(["u", undefined, 3]),
          annotations: pj([
            undefined,
            {
              "lace.io/network": "n",
              "lace.io/network-id": pick(["1", "65535", "0", "x", "99999"]),
            },
            { "lace.io/network-id": "5" },
            { "lace.io/network": 5, "lace.io/network-id": 5 },
          ]),
        },
      ]),
      spec: pj([
        {
          containers: pj([list(container)]),
          initContainers: pj([list(container)]),
          hostNetwork: pick([undefined, false, true, "true"]),
        },
      ]),
      status: pj([
        {
          phase: pick([undefined, "Running", "Failed", "Succeeded", 3]),
          podIP: ip(),
          podIPs: pj([undefined, list(() => ({ ip: ip() })), list(ip)]),
        },
      ]),
    },
  ]);
}

Deno.test("probeTargetsForPod() never throws and yields only valid targets over generated pods", () => {
  const random = new SeededRandom(42);
  const rand = () => random.next();
  let produced = 0;
  for (let i = 0; i < 20_000; i++) {
    const input = generatedPod(rand);
    const { targets, skipped } = probeTargetsForPod(input as Pod, OPTS);
    const seen = new Set<string>();
    for (const t of targets) {
      produced++;
      assert.ok(Number.isInteger(t.key.port) && t.key.port >= 1 && t.key.port <= 65535);
      assert.ok(Number.isInteger(t.networkId) && t.networkId >= 1 && t.networkId <= 65535);
      assert.deepEqual(canonicalAddress(t.key.address), {
        family: t.key.family,
        address: t.key.address,
      });
      assert.ok(!seen.has(keyId(t.key)), `duplicate key ${keyId(t.key)}`);
      seen.add(keyId(t.key));
    }
    for (const s of skipped) assert.ok(s.message.length > 0);
  }
  assert.ok(produced > 100, `the generator should produce some valid targets, got ${produced}`);
});

const NODE_NET = { network: "green", networkId: 1 };

Deno.test("probeTargetsForPod() tags every target with the node's network, not the annotation's", () => {
  const p = pod({ ips: ["10.1.0.5", "fd00::5"] }); // annotated blue/7
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.deepEqual(targets.map((t) => [t.network, t.networkId]), [["green", 1], ["green", 1]]);
  assert.deepEqual(mismatch, {
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    node: NODE_NET,
    annotated: 'network "blue" (id 7)',
  });
});

Deno.test("probeTargetsForPod() reports no mismatch when the annotations agree with the node", () => {
  const p = pod({ annotations: { "lace.io/network": "green", "lace.io/network-id": "1" } });
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].networkId, 1);
  assert.equal(mismatch, undefined);
});

Deno.test("probeTargetsForPod() reports a network name that disagrees even when the id agrees", () => {
  const p = pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "1" } });
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].network, "green");
  assert.equal(mismatch?.annotated, 'network "blue" (id 1)');
});

Deno.test("probeTargetsForPod() uses the node's network for a pod without annotations, silently", () => {
  const { targets, mismatch, skipped } = probeTargetsForPod(
    pod({ annotations: null }),
    OPTS,
    NODE_NET,
  );
  assert.equal(targets[0].networkId, 1);
  assert.equal(mismatch, undefined);
  assert.deepEqual(skipped, []);
});

Deno.test("probeTargetsForPod() reports malformed annotations as a mismatch when the node knows the network", () => {
  const p = pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "0x2" } });
  const { targets, mismatch, skipped } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].networkId, 1);
  assert.match(mismatch!.annotated, /must be a decimal number/);
  assert.deepEqual(skipped, []);
});

Deno.test("probeTargetsForPod() gives a default-network pod claims, not targets, and nothing to report", () => {
  const p = pod({
    annotations: null,
    ips: ["10.1.0.5", "127.0.0.1"],
    containers: [{
      name: "app",
      readinessProbe: { httpGet: { port: 8080 } },
      livenessProbe: { tcpSocket: { port: "nope" } },
    }],
  });
  const { targets, skipped, claims } = probeTargetsForPod(p, OPTS);
  assert.deepEqual(targets, []);
  assert.deepEqual(skipped, []);
  assert.deepEqual(claims?.map((c) => [keyId(c.key), c.networkId]), [["10.1.0.5:8080", 0]]);
});

Deno.test("podPlacement() says where a live pod sits: its network and its own addresses", () => {
  assert.deepEqual(podPlacement(pod({ ips: ["10.1.0.5", "169.254.1.1"] }), OPTS), {
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    network: { network: "blue", networkId: 7 },
    addresses: [{ family: "ipv4", address: "10.1.0.5", port: 0 }],
  });
  assert.deepEqual(podPlacement(pod({}), OPTS, NODE_NET)?.network, NODE_NET);
  assert.deepEqual(podPlacement(pod({ annotations: null }), OPTS)?.network, {
    network: "",
    networkId: 0,
  });
  const malformed = pod({ annotations: { "lace.io/network": "x", "lace.io/network-id": "0" } });
  assert.equal(podPlacement(malformed, OPTS)?.network, undefined);
});

Deno.test("podPlacement() leaves out host-network and finished pods", () => {
  assert.equal(podPlacement(pod({ hostNetwork: true }), OPTS), undefined);
  assert.equal(podPlacement(pod({ phase: "Succeeded" }), OPTS), undefined);
  assert.equal(podPlacement(pod({ phase: "Failed" }), OPTS), undefined);
});

Deno.test("probeTargetsForPod() keeps a probe's periodSeconds, and leaves out one that is not a whole number ≥ 1", () => {
  const withPeriod = (periodSeconds: unknown) =>
    probeTargetsForPod(
      pod({
        containers: [{
          name: "app",
          livenessProbe: { tcpSocket: { port: 9 }, periodSeconds: periodSeconds as number },
        }],
      }),
      OPTS,
    ).targets[0].periodSeconds;
  assert.equal(withPeriod(3), 3);
  assert.equal(withPeriod(0), undefined);
  assert.equal(withPeriod(2.5), undefined);
  assert.equal(withPeriod("5"), undefined);
});
