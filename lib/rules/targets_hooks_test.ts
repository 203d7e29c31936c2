/**
 * Lifecycle hooks as targets: the ports of postStart and preStop httpGet
 * handlers get targets under every rule probe ports do (network, host,
 * named ports, special addresses, sidecars, conflicts, cap), tcpSocket, exec
 * and sleep hooks none, and `lifecycleHooks: false` turns it all off.
 */
import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import { normalisePod, type Pod } from "../pods/pod.ts";
import { resolveConflicts } from "./conflicts.ts";
import { capTargets } from "./share.ts";
import { isHookKind, kindLabel } from "./kinds.ts";
import { probeTargetsForPod, type Target } from "./targets.ts";
import { target } from "./_pod_fixture.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };
const OFF = { ...OPTS, lifecycleHooks: false };

function pod(
  containers: unknown[],
  over: {
    initContainers?: unknown[];
    network?: [string, string] | null;
    ips?: string[];
    uid?: string;
  } = {},
): Pod {
  const [network, id] = over.network === null ? [] : over.network ?? ["blue", "7"];
  const annotations = network ? { "lace.io/network": network, "lace.io/network-id": id } : {};
  const uid = over.uid ?? "u1";
  return {
    metadata: { name: `web-${uid}`, namespace: "shop", uid, annotations },
    spec: {
      containers,
      ...(over.initContainers ? { initContainers: over.initContainers } : {}),
    },
    status: {
      phase: "Running",
      podIPs: (over.ips ?? ["10.1.0.5", "fd00::5"]).map((ip) => ({ ip })),
    },
  } as unknown as Pod;
}

/** A container "app" with these lifecycle hooks (and whatever else `extra` adds). */
function hooked(lifecycle: unknown, extra: Record<string, unknown> = {}) {
  return { name: "app", lifecycle, ...extra };
}

/** "kind key" per target, in the rules' order. */
function served(targets: Target[]): string[] {
  return targets.map((t) => `${t.container}/${t.probe} ${keyId(t.key)}`);
}

interface Case {
  name: string;
  pod: Pod;
  /** "container/kind key" of each target, in order. */
  targets: string[];
  /** "reason: message" of each skip. */
  skips?: string[];
}

const CASES: Case[] = [
  {
    name: "a postStart httpGet hook gets a target on every pod IP",
    pod: pod([hooked({ postStart: { httpGet: { port: 8080, path: "/started" } } })]),
    targets: ["app/postStart 10.1.0.5:8080", "app/postStart [fd00::5]:8080"],
  },
  {
    name: "a preStop httpGet hook gets a target on every pod IP",
    pod: pod([hooked({ preStop: { httpGet: { port: 9090 } } })]),
    targets: ["app/preStop 10.1.0.5:9090", "app/preStop [fd00::5]:9090"],
  },
  {
    name: "both hooks get targets, postStart first",
    pod: pod([hooked({ preStop: { httpGet: { port: 2 } }, postStart: { httpGet: { port: 1 } } })], {
      ips: ["10.1.0.5"],
    }),
    targets: ["app/postStart 10.1.0.5:1", "app/preStop 10.1.0.5:2"],
  },
  {
    name: "a tcpSocket hook gets no target: the kubelet does not run it",
    pod: pod([hooked({ preStop: { tcpSocket: { port: 9090 } } })]),
    targets: [],
  },
  {
    name: "exec and sleep hooks get no target: they make no connection",
    pod: pod([
      hooked({ postStart: { exec: { command: ["true"] } }, preStop: { sleep: { seconds: 5 } } }),
    ]),
    targets: [],
  },
  {
    name: "exec wins over httpGet in one hook, as in the kubelet's hook runner",
    pod: pod([hooked({ preStop: { exec: { command: ["true"] }, httpGet: { port: 9090 } } })]),
    targets: [],
  },
  {
    name: "a hook whose host is one of the pod's IPs gets that address only",
    pod: pod([hooked({ postStart: { httpGet: { port: 80, host: "FD00:0::5" } } })]),
    targets: ["app/postStart [fd00::5]:80"],
  },
  {
    name: "a hook's named port resolves in its own container",
    pod: pod([hooked({ preStop: { httpGet: { port: "admin" } } }, {
      ports: [{ name: "http", containerPort: 80 }, { name: "admin", containerPort: 9901 }],
    })], { ips: ["10.1.0.5"] }),
    targets: ["app/preStop 10.1.0.5:9901"],
  },
  {
    name: "a hook's port name that matches no port of its container is skipped",
    pod: pod([
      hooked({ preStop: { httpGet: { port: "admin" } } }),
      { name: "other", ports: [{ name: "admin", containerPort: 9901 }] },
    ]),
    targets: [],
    skips: [
      `named-port: preStop hook of container "app": Port name "admin" matches no port of container "app"`,
    ],
  },
  {
    name: "a hook's port outside 1..65535 is skipped",
    pod: pod([hooked({ postStart: { httpGet: { port: 0 } } })]),
    targets: [],
    skips: [`port-range: postStart hook of container "app": Probe port 0 is outside 1..65535`],
  },
  {
    name: "a hook on a sidecar (restartable init container) gets a target",
    pod: pod([], {
      ips: ["10.1.0.5"],
      initContainers: [{
        name: "proxy",
        restartPolicy: "Always",
        lifecycle: { preStop: { httpGet: { port: 15000, path: "/drain" } } },
      }],
    }),
    targets: ["proxy/preStop 10.1.0.5:15000"],
  },
  {
    name: "a hook on an ordinary init container gets no target (the API refuses it there)",
    pod: pod([], {
      initContainers: [{ name: "setup", lifecycle: { postStart: { httpGet: { port: 9 } } } }],
    }),
    targets: [],
  },
  {
    name: "a key a probe and a hook share is one target, named by the probe before it",
    pod: pod([hooked({ preStop: { httpGet: { port: 8080, path: "/drain" } } }, {
      readinessProbe: { httpGet: { port: 8080, path: "/ready" } },
    })], { ips: ["10.1.0.5"] }),
    targets: ["app/readiness 10.1.0.5:8080"],
  },
  {
    name: "a key a hook and a later container's probe share is named by the hook",
    pod: pod([
      hooked({ preStop: { httpGet: { port: 8080 } } }),
      { name: "second", livenessProbe: { tcpSocket: { port: 8080 } } },
    ], { ips: ["10.1.0.5"] }),
    targets: ["app/preStop 10.1.0.5:8080"],
  },
  {
    name: "a pod IP that is loopback or link-local never becomes a hook target",
    pod: pod([hooked({ preStop: { httpGet: { port: 9090 } } })], {
      ips: ["127.0.0.1", "169.254.169.254", "10.1.0.5"],
    }),
    targets: ["app/preStop 10.1.0.5:9090"],
    skips: [
      `special-address: Pod IP "127.0.0.1" never becomes a probe target: a loopback address is the node itself`,
      `special-address: Pod IP "169.254.169.254" never becomes a probe target: a link-local address (169.254.0.0/16, incl. the metadata service) belongs to the node's link`,
    ],
  },
  {
    name: "a lifecycle or hook that is not an object is reported; null is absent",
    pod: pod([
      hooked(5),
      { name: "b", lifecycle: { postStart: "x", preStop: null } },
      { name: "c", lifecycle: null },
    ]),
    targets: [],
    skips: [
      `malformed: lifecycle of container "app" is not an object`,
      `malformed: lifecycle.postStart of container "b" is not an object`,
    ],
  },
];

for (const c of CASES) {
  Deno.test(`probeTargetsForPod(): ${c.name}`, () => {
    const { targets, skipped } = probeTargetsForPod(c.pod, OPTS);
    assert.deepEqual(served(targets), c.targets);
    assert.deepEqual(skipped.map((s) => `${s.reason}: ${s.message}`), c.skips ?? []);
  });
}

Deno.test("a hook whose host is not one of the pod's IPs is never a target (SSRF)", () => {
  for (const host of ["10.1.0.6", "fd00::6", "victim.other.svc", 5, "127.0.0.1"]) {
    for (const hook of ["postStart", "preStop"]) {
      const { targets, skipped } = probeTargetsForPod(
        pod([hooked({ [hook]: { httpGet: { port: 8080, host } } })]),
        OPTS,
      );
      assert.deepEqual(targets, [], `${hook} host ${host}`);
      assert.deepEqual(skipped.map((s) => `${s.reason}: ${s.message}`), [
        `host: ${hook} hook of container "app" sets host ${
          JSON.stringify(host)
        }, which is not one of the pod's IPs: the kubelet connects there, so Lace does not redirect it`,
      ]);
    }
  }
});

Deno.test("a hook target carries its handler, path and scheme, and no period", () => {
  const { targets } = probeTargetsForPod(
    pod([hooked({ preStop: { httpGet: { port: 9090, path: "/drain", scheme: "HTTPS" } } })], {
      ips: ["10.1.0.5"],
    }),
    OPTS,
  );
  assert.deepEqual(targets, [target({
    key: { family: "ipv4", address: "10.1.0.5", port: 9090 },
    pod: { namespace: "shop", name: "web-u1", uid: "u1" },
    probe: "preStop",
    http: { path: "/drain", scheme: "HTTPS" },
  })]);
});

Deno.test("a skipped hook names its container and hook", () => {
  const [skip] = probeTargetsForPod(
    pod([hooked({ postStart: { httpGet: { port: 80, host: "evil" } } })]),
    OPTS,
  ).skipped;
  assert.deepEqual([skip.container, skip.probe, skip.reason], ["app", "postStart", "host"]);
});

Deno.test("with lifecycleHooks false, hooks get no target and no report, and probes are unchanged", () => {
  const p = pod([
    hooked(
      { postStart: { httpGet: { port: 1 } }, preStop: { httpGet: { port: 2, host: "evil" } } },
      {
        readinessProbe: { tcpSocket: { port: 3 } },
      },
    ),
    { name: "b", lifecycle: 5 },
  ], { ips: ["10.1.0.5"] });
  const off = probeTargetsForPod(p, OFF);
  assert.deepEqual(served(off.targets), ["app/readiness 10.1.0.5:3"]);
  assert.deepEqual(off.skipped, []);
  const on = probeTargetsForPod(p, { ...OPTS, lifecycleHooks: true });
  assert.deepEqual(served(on.targets), ["app/readiness 10.1.0.5:3", "app/postStart 10.1.0.5:1"]);
  assert.deepEqual(on.skipped.map((s) => s.reason), ["host", "malformed"]);
});

Deno.test("with lifecycleHooks false, a hook-only pod claims nothing, on the default network too", () => {
  const p = pod([hooked({ preStop: { httpGet: { port: 9090 } } })], { network: null });
  assert.deepEqual(probeTargetsForPod(p, OFF).claims, undefined);
  assert.deepEqual(served(probeTargetsForPod(p, OPTS).claims ?? []), [
    "app/preStop 10.1.0.5:9090",
    "app/preStop [fd00::5]:9090",
  ]);
});

Deno.test("a hook-only key two networks claim is tagged for neither, like a probe key", () => {
  const hook = probeTargetsForPod(
    pod([hooked({ preStop: { httpGet: { port: 9090 } } })], { ips: ["10.1.0.5"], uid: "a" }),
    OPTS,
  ).targets;
  const probe = probeTargetsForPod(
    pod([{ name: "app", readinessProbe: { httpGet: { port: 9090 } } }], {
      ips: ["10.1.0.5"],
      uid: "b",
      network: ["red", "8"],
    }),
    OPTS,
  ).targets;
  const { targets, conflicts } = resolveConflicts([...hook, ...probe], "fail-closed");
  assert.deepEqual(targets, []);
  assert.deepEqual(conflicts.map((c) => c.dropped.map((d) => d.pod.uid)), [
    ["a", "b"],
  ]);
});

Deno.test("hook targets count toward the per-pod cap after the probes before them", () => {
  const p = pod([hooked({ preStop: { httpGet: { port: 2 } } }, {
    livenessProbe: { tcpSocket: { port: 1 } },
  })]);
  const { writable, over } = capTargets(probeTargetsForPod(p, OPTS).targets, 3);
  assert.deepEqual(served(writable), [
    "app/liveness 10.1.0.5:1",
    "app/liveness [fd00::5]:1",
    "app/preStop 10.1.0.5:2",
  ]);
  assert.deepEqual(served(over), ["app/preStop [fd00::5]:2"]);
});

Deno.test("isHookKind() and kindLabel() tell hooks from probes", () => {
  assert.deepEqual(
    ["postStart", "preStop", "readiness", "liveness", "startup", undefined, "PreStop"].map(
      isHookKind,
    ),
    [true, true, false, false, false, false, false],
  );
  assert.equal(kindLabel("preStop"), "preStop hook");
  assert.equal(kindLabel("startup"), "startup probe");
});

Deno.test("a hook's named port and exec survive the trim every source applies (normalisePod)", () => {
  const p = normalisePod(pod([hooked({
    postStart: { exec: { command: ["true"] }, httpGet: { port: 1 } },
    preStop: { httpGet: { port: "admin", path: "/drain", httpHeaders: [{ name: "a" }] } },
  }, { ports: [{ name: "admin", containerPort: 9901 }] })], { ips: ["10.1.0.5"] }));
  const { targets, skipped } = probeTargetsForPod(p, OPTS);
  assert.deepEqual(served(targets), ["app/preStop 10.1.0.5:9901"]);
  assert.deepEqual(skipped, []);
});
