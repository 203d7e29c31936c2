/**
 * Property tests of the rules, seeded and reproducible (a failure prints the
 * seed that replays it): random valid pods get exactly the targets their
 * probes and httpGet lifecycle hooks ask for and no skip, and conflict
 * resolution keeps one target per key whatever order the pods come in. Pods with junk at every level never make
 * the rules throw, and every target they yield is valid.
 */
import assert from "node:assert/strict";
import { forAll, SeededRandom } from "../../tests/helpers/property.ts";
import { canonicalAddress } from "../net/address.ts";
import { keyId } from "../probe/key.ts";
import type { Pod } from "../pods/pod.ts";
import { CONFLICT_POLICIES, resolveConflicts } from "./conflicts.ts";
import { probeTargetsForPod, type Target } from "./targets.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };

/** A unicast pod address, as a source might write it (IPv6 sometimes in upper case). */
function podAddress(random: SeededRandom): string {
  if (random.chance(0.6)) {
    return `10.${random.int(0, 255)}.${random.int(0, 255)}.${random.int(1, 254)}`;
  }
  const text = `fd${random.int(0, 255).toString(16).padStart(2, "0")}::${
    random.int(1, 0xffff).toString(16)
  }`;
  return random.chance(0.3) ? text.toUpperCase() : text;
}

/**
 * A random valid pod and the keys its probes must get: every probe has a port
 * in 1..65535 (a number, a numeric string, or a name of its container's port)
 * and no host or one of the pod's own addresses.
 */
function validPod(random: SeededRandom): { pod: Pod; keys: Set<string>; networkId: number } {
  const networkId = random.pick([1, 65535, random.int(1, 65535)]);
  const ips = [...new Set(Array.from({ length: random.int(1, 3) }, () => podAddress(random)))];
  const canonical = [...new Map(ips.map((ip) => {
    const c = canonicalAddress(ip);
    return [c.address, c] as const;
  })).values()];
  const keys = new Set<string>();
  const container = (name: string, sidecar: boolean) => {
    const ports = Array.from({ length: random.int(0, 3) }, (_, i) => ({
      name: `p${i}`,
      containerPort: random.int(1, 65535),
    }));
    const c: Record<string, unknown> = { name, ports };
    if (sidecar) c.restartPolicy = "Always";
    const lifecycle: Record<string, unknown> = {};
    for (
      const field of ["livenessProbe", "readinessProbe", "startupProbe", "postStart", "preStop"]
    ) {
      if (random.chance(0.3)) continue;
      const hook = field === "postStart" || field === "preStop";
      let port: number | string = random.pick([1, 65535, random.int(1, 65535)]);
      let resolved = port;
      const way = random.int(0, 2);
      if (way === 1) port = String(port);
      if (way === 2 && ports.length > 0) {
        const named = random.pick(ports);
        [port, resolved] = [named.name, named.containerPort];
      }
      // Hooks: only httpGet connects; tcpSocket, exec and sleep ask for no key.
      const handler = hook
        ? random.pick(["httpGet", "httpGet", "tcpSocket", "exec", "sleep"])
        : random.pick(["httpGet", "tcpSocket", "grpc"]);
      if (handler === "grpc") port = resolved;
      const action: Record<string, unknown> = handler === "exec"
        ? { command: ["true"] }
        : handler === "sleep"
        ? { seconds: 1 }
        : { port };
      let where = canonical;
      if (handler !== "grpc" && random.chance(0.2)) {
        const own = random.int(0, ips.length - 1);
        action.host = ips[own];
        where = [canonicalAddress(ips[own])];
      }
      if (hook) lifecycle[field] = { [handler]: action };
      else c[field] = { [handler]: action };
      if (hook && handler !== "httpGet") continue;
      for (const a of where) {
        keys.add(keyId({ family: a.family, address: a.address, port: resolved }));
      }
    }
    if (Object.keys(lifecycle).length > 0) c.lifecycle = lifecycle;
    return c;
  };
  const pod = {
    metadata: {
      name: "p",
      namespace: "ns",
      uid: `u${random.int(0, 1e9)}`,
      annotations: { "lace.io/network": `net-${networkId}`, "lace.io/network-id": `${networkId}` },
    },
    spec: {
      containers: Array.from({ length: random.int(1, 3) }, (_, i) => container(`c${i}`, false)),
      initContainers: Array.from(
        { length: random.int(0, 2) },
        (_, i) => container(`s${i}`, true),
      ),
    },
    status: { phase: random.pick(["Running", "Pending"]), podIPs: ips.map((ip) => ({ ip })) },
  };
  return { pod: pod as unknown as Pod, keys, networkId };
}

Deno.test("property: a random valid pod gets exactly the keys its probes and httpGet hooks ask for, and no skip (seeded)", () => {
  forAll({ seed: 3000, runs: 1000 }, (random) => {
    const { pod, keys, networkId } = validPod(random);
    const { targets, skipped } = probeTargetsForPod(pod, OPTS);
    assert.deepEqual(skipped, []);
    assert.deepEqual(targets.map((t) => keyId(t.key)).sort(), [...keys].sort());
    for (const t of targets) {
      assert.deepEqual([t.networkId, t.network], [networkId, `net-${networkId}`]);
    }
  });
});

/** Targets of a few pods in a few networks that often share keys. */
function claims(random: SeededRandom): Target[] {
  const out: Target[] = [];
  for (let i = 0; i < random.int(1, 6); i++) {
    const networkId = random.int(1, 3);
    const uid = `u${i}`;
    const created = random.chance(0.8)
      ? new Date(Date.UTC(2026, 0, 1, 0, 0, random.int(0, 3))).toISOString()
      : undefined;
    for (let j = 0; j < random.int(1, 3); j++) {
      out.push({
        key: { family: "ipv4", address: `10.0.0.${random.int(1, 3)}`, port: random.pick([80, 81]) },
        networkId,
        network: `net${networkId}`,
        pod: { namespace: "ns", name: `pod-${i}`, uid, creationTimestamp: created },
        container: "c",
        probe: "readiness",
        handler: "tcpSocket",
      });
    }
  }
  return out;
}

function shuffled<T>(random: SeededRandom, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

Deno.test("property: resolveConflicts() keeps at most one target per key, whatever the input order (seeded)", () => {
  forAll({ seed: 4000, runs: 1000 }, (random) => {
    const input = claims(random);
    for (const policy of CONFLICT_POLICIES) {
      const first = resolveConflicts(input, policy);
      assert.deepEqual(resolveConflicts(shuffled(random, input), policy), first, policy);
      const kept = first.targets.map((t) => keyId(t.key));
      assert.deepEqual(kept, [...new Set(kept)].sort(), `${policy}: one per key, sorted`);
      const conflicted = new Set(first.conflicts.map((c) => keyId(c.key)));
      for (const id of new Set(input.map((t) => keyId(t.key)))) {
        const networks = new Set(input.filter((t) => keyId(t.key) === id).map((t) => t.networkId));
        assert.equal(conflicted.has(id), networks.size > 1, `${policy}: ${id} conflicted`);
        const keeps = policy === "older-wins" || networks.size === 1;
        assert.equal(kept.includes(id), keeps, `${policy}: ${id} kept`);
      }
      for (const c of first.conflicts) {
        for (const d of c.dropped) assert.notEqual(d.networkId, c.kept?.networkId);
      }
    }
  });
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
        lifecycle: pj([
          undefined,
          { postStart: probe(), preStop: probe() },
          { preStop: { sleep: { seconds: 1 } } },
          { postStart: pick([null, 3, "x", []]) },
        ]),
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
