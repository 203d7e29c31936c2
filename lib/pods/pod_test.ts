import assert from "node:assert/strict";
import { assertNotTooDeep, MAX_POD_DEPTH, normalisePod } from "./pod.ts";

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
  assert.throws(() => assertNotTooDeep(hostile), TypeError);
  assertNotTooDeep(normalisePod({ ...base, spec: { containers: [], extra: nest(20) } }));
  assertNotTooDeep(normalisePod(full));
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
