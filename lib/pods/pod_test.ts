import assert from "node:assert/strict";
import { assertUsable, MAX_POD_DEPTH, normalisePod, PodRefusedError } from "./pod.ts";

const full = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "web",
    uid: "u1",
    creationTimestamp: new Date(Date.UTC(2026, 0, 1)),
    annotations: { "lace.io/network": "blue" },
    labels: { app: "web" },
    managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": {} } }],
  },
  spec: {
    nodeName: "n1",
    volumes: [{ name: "data", emptyDir: {} }],
    containers: [{
      name: "app",
      image: "registry.example/app:1",
      env: [{ name: "A", value: "1" }],
      ports: [{ name: "http", containerPort: 8080 }],
      livenessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 },
      lifecycle: { preStop: { httpGet: { path: "/drain", port: 8081 } } },
    }],
    initContainers: [{ name: "side", image: "x", restartPolicy: "Always" }],
  },
  status: { phase: "Running", podIP: "10.0.0.1", conditions: [{ type: "Ready" }] },
};

Deno.test("normalisePod() keeps the fields Lace reads and drops the rest", () => {
  assert.deepEqual(normalisePod(full), {
    metadata: {
      name: "web",
      namespace: "default",
      uid: "u1",
      creationTimestamp: "2026-01-01T00:00:00.000Z",
      annotations: { "lace.io/network": "blue" },
    },
    spec: {
      nodeName: "n1",
      containers: [{
        name: "app",
        ports: [{ name: "http", containerPort: 8080 }],
        livenessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 },
        lifecycle: { preStop: { httpGet: { path: "/drain", port: 8081 } } },
      }],
      initContainers: [{ name: "side", restartPolicy: "Always" }],
    },
    status: { phase: "Running", podIP: "10.0.0.1" },
  });
});

Deno.test("normalisePod() keeps values of the wrong shape as they are, for the rules to judge", () => {
  const odd = normalisePod({
    metadata: { name: "x", uid: "u", annotations: "not an object" },
    spec: { containers: [null, "app", { name: 3, livenessProbe: [1] }], initContainers: 7 },
    status: "Running",
  });
  assert.deepEqual(odd.metadata.annotations, "not an object");
  assert.deepEqual(odd.spec.containers, [null, "app", { name: 3, livenessProbe: [1] }]);
  assert.equal(odd.spec.initContainers, 7);
  assert.equal(odd.status, "Running");
});

Deno.test("normalisePod() freezes its result all the way down", () => {
  const pod = normalisePod(full);
  assert.ok(Object.isFrozen(pod.spec.containers[0].livenessProbe!.httpGet));
  assert.throws(() => {
    (pod.metadata as { name: string }).name = "other";
  }, TypeError);
});

Deno.test("normalisePod() hands back its own result as it is and copies anything else", () => {
  const pod = normalisePod(full);
  assert.equal(normalisePod(pod), pod);
  const copy = normalisePod(structuredClone(pod));
  assert.notEqual(copy, pod);
  assert.deepEqual(copy, pod);
});

Deno.test("normalisePod() freezes a deeply nested probe without overflowing the stack", () => {
  let deep: unknown = {};
  for (let i = 0; i < 5000; i++) deep = { a: deep };
  const pod = normalisePod({
    metadata: { name: "x", uid: "u" },
    spec: { containers: [{ name: "c", livenessProbe: { exec: deep } }] },
  });
  assert.ok(Object.isFrozen(pod.spec.containers[0].livenessProbe!.exec));
});

Deno.test("normalisePod() marks a pod nested too deeply, even in a field it drops", () => {
  const nest = (depth: number) => {
    let deep: unknown = {};
    for (let i = 0; i < depth; i++) deep = { a: deep };
    return deep;
  };
  const base = { metadata: { name: "x", uid: "u" }, spec: { containers: [] } };
  const hostile = normalisePod({ ...base, spec: { containers: [], extra: nest(MAX_POD_DEPTH) } });
  assert.equal(Object.hasOwn(hostile.spec, "extra"), false);
  assert.throws(() => assertUsable(hostile), TypeError);
  assertUsable(normalisePod({ ...base, spec: { containers: [], extra: nest(20) } }));
  assertUsable(normalisePod(full));
});

Deno.test("normalisePod() still refuses a pod without name, uid or containers list", () => {
  assert.throws(
    () => normalisePod({ metadata: { uid: "u" }, spec: { containers: [] } }),
    TypeError,
  );
  assert.throws(
    () => normalisePod({ metadata: { name: "x" }, spec: { containers: [] } }),
    TypeError,
  );
  assert.throws(() => normalisePod({ metadata: { name: "x", uid: "u" }, spec: {} }), TypeError);
  assert.throws(() => normalisePod(null), TypeError);
});

Deno.test("normalisePod() keeps of a container's ports only the first of each name a probe names", () => {
  const pod = normalisePod({
    metadata: { name: "x", uid: "u" },
    spec: {
      containers: [{
        name: "c",
        ports: [
          { name: "metrics", containerPort: 9090 },
          { name: "http", containerPort: 8080, protocol: "TCP" },
          { name: "http", containerPort: 8081 },
          { containerPort: 7000 },
          "junk",
          { name: "grpc", containerPort: 7070 },
        ],
        livenessProbe: { httpGet: { port: "http" } },
        readinessProbe: { tcpSocket: { port: "grpc" } },
        startupProbe: { grpc: { port: 7070 } },
      }, { name: "d", ports: [{ name: "http", containerPort: 1 }] }],
    },
  });
  assert.deepEqual(pod.spec.containers[0].ports, [
    { name: "http", containerPort: 8080 },
    { name: "grpc", containerPort: 7070 },
  ]);
  assert.equal(Object.hasOwn(pod.spec.containers[1], "ports"), false);
});

Deno.test("normalisePod() keeps of a probe its handler's address, and of exec only that it is set", () => {
  const pod = normalisePod({
    metadata: { name: "x", uid: "u" },
    spec: {
      containers: [{
        name: "c",
        livenessProbe: {
          exec: { command: ["sh", "-c", "x".repeat(10_000)] },
          httpGet: {
            port: 80,
            path: "/p",
            scheme: "HTTPS",
            host: "h",
            httpHeaders: [{ name: "a" }],
          },
          timeoutSeconds: 3,
          periodSeconds: 7,
        },
        readinessProbe: { grpc: { port: 5, service: "s" }, exec: null },
      }],
    },
  });
  assert.deepEqual(pod.spec.containers[0].livenessProbe, {
    exec: {},
    httpGet: { port: 80, path: "/p", scheme: "HTTPS", host: "h" },
    periodSeconds: 7,
  });
  assert.deepEqual(pod.spec.containers[0].readinessProbe, {
    grpc: { port: 5, service: "s" },
    exec: null,
  });
});

Deno.test("normalisePod() keeps of a lifecycle its hooks as probes are kept, and the ports they name", () => {
  const pod = normalisePod({
    metadata: { name: "x", uid: "u" },
    spec: {
      containers: [{
        name: "c",
        ports: [{ name: "admin", containerPort: 9901, protocol: "TCP" }, {
          name: "x",
          containerPort: 1,
        }],
        lifecycle: {
          postStart: { exec: { command: ["sh", "-c", "x".repeat(10_000)] } },
          preStop: {
            httpGet: { port: "admin", path: "/drain", host: "h", httpHeaders: [{ name: "a" }] },
          },
          stopSignal: "SIGTERM",
        },
      }, { name: "d", lifecycle: { preStop: { sleep: { seconds: 5 } } } }],
    },
  });
  assert.deepEqual(pod.spec.containers[0], {
    name: "c",
    ports: [{ name: "admin", containerPort: 9901 }],
    lifecycle: {
      postStart: { exec: {} },
      preStop: { httpGet: { port: "admin", path: "/drain", host: "h" } },
    },
  });
  assert.deepEqual(pod.spec.containers[1], { name: "d", lifecycle: { preStop: {} } });
});

Deno.test("normalisePod() keeps only the annotations it is given, and all without a list", () => {
  const input = {
    metadata: {
      name: "x",
      uid: "u",
      annotations: {
        "lace.io/network": "blue",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
      },
    },
    spec: { containers: [] },
  };
  assert.deepEqual(
    normalisePod(input, { annotations: ["lace.io/network", "lace.io/network-id"] })
      .metadata.annotations,
    { "lace.io/network": "blue" },
  );
  assert.deepEqual(normalisePod(input).metadata.annotations, input.metadata.annotations);
});

Deno.test("normalisePod() refuses a pod whose kept fields are over maxBytes, keeping who it is", () => {
  const big = (n: number) => ({
    metadata: { name: "x", namespace: "t", uid: "u", resourceVersion: "5", labels: { a: "b" } },
    spec: {
      nodeName: "n1",
      containers: Array.from({ length: n }, (_, i) => ({
        name: `c${i}`,
        livenessProbe: { httpGet: { port: 8080, path: "/healthz" } },
      })),
    },
    status: { phase: "Pending" },
  });
  const small = normalisePod(big(10), { maxBytes: 4096 });
  assertUsable(small);
  assert.equal(small.spec.containers.length, 10);
  const refused = normalisePod(big(100), { maxBytes: 4096 });
  assert.deepEqual(refused, {
    metadata: { name: "x", namespace: "t", uid: "u", resourceVersion: "5" },
    spec: { nodeName: "n1", containers: [] },
    status: { phase: "Pending" },
  });
  assert.ok(Object.isFrozen(refused.metadata));
  assert.throws(
    () => assertUsable(refused),
    (e) =>
      e instanceof PodRefusedError && e.reason === "too-large" &&
      /over the cap of 4096/.test(e.message),
  );
  // Fields Lace drops never count: a pod of 1.5 MB of env is small to Lace.
  const env = Array.from({ length: 30_000 }, (_, i) => ({ name: `V${i}`, value: "x".repeat(40) }));
  const padded = big(1);
  (padded.spec.containers[0] as Record<string, unknown>).env = env;
  assert.ok(JSON.stringify(padded).length > 1_500_000);
  assertUsable(normalisePod(padded, { maxBytes: 4096 }));
});
