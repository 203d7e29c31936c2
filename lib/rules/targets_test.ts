import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import type { Pod } from "../pods/pod.ts";
import { OPTS, pod, target } from "./_pod_fixture.ts";
import { probeTargetsForPod, type Target } from "./targets.ts";
import type { Skip } from "./skip.ts";

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
    name: "a network name with a CR/LF is skipped",
    pod: pod({ annotations: { "lace.io/network": "blue\r\nred", "lace.io/network-id": "7" } }),
    keys: [],
    skips: ["annotation"],
  },
  {
    name: "a network name over 253 characters is skipped",
    pod: pod({ annotations: { "lace.io/network": "b".repeat(254), "lace.io/network-id": "7" } }),
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
  assert.deepEqual(targets, [target()]);
});

Deno.test("probeTargetsForPod() names the pod, container and probe of a skip", () => {
  const p = pod({ containers: [{ name: "app", startupProbe: { tcpSocket: { port: "nope" } } }] });
  const [skip] = probeTargetsForPod(p, OPTS).skipped;
  assert.equal(skip.pod.uid, "u1");
  assert.equal(skip.container, "app");
  assert.equal(skip.probe, "startup");
  assert.match(skip.message, /"nope"/);
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
