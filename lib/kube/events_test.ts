import assert from "node:assert/strict";
import { V1MicroTime } from "./k8s.ts";
import { type EventApi, EventRecorder } from "./events.ts";
import { nodeObjectRef, type ObjectRef } from "./event_sink.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";

const POD: ObjectRef = {
  kind: "Pod",
  apiVersion: "v1",
  name: "web-1",
  namespace: "shop",
  uid: "u-1",
};

type Call = {
  op: "create" | "patch";
  namespace: string;
  name?: string;
  body: Record<string, unknown>;
};

/** Records calls; `fail` decides per call whether to reject and with which status. */
class FakeApi implements EventApi {
  calls: Call[] = [];
  fail: (call: Call) => number | undefined = () => undefined;
  gate?: Promise<void>;
  async #call(call: Call): Promise<unknown> {
    this.calls.push(call);
    if (this.gate) await this.gate;
    const status = this.fail(call);
    if (status !== undefined) throw Object.assign(new Error(`HTTP ${status}`), { code: status });
    return call.body;
  }
  createNamespacedEvent(p: { namespace: string; body: never }): Promise<unknown> {
    return this.#call({ op: "create", namespace: p.namespace, body: p.body });
  }
  patchNamespacedEvent(p: { namespace: string; name: string; body: unknown }): Promise<unknown> {
    return this.#call({ op: "patch", namespace: p.namespace, name: p.name, body: { ops: p.body } });
  }
}

function recorder(
  api: FakeApi,
  extra: Partial<ConstructorParameters<typeof EventRecorder>[0]> = {},
) {
  return new EventRecorder({ api, nodeName: "node-a", retryDelayMs: 1, ...extra });
}

Deno.test("an Event carries every field the API server requires", async () => {
  const api = new FakeApi();
  const events = recorder(api, { now: () => Date.UTC(2024, 0, 2, 3, 4, 5, 678) });
  events.warn(POD, "ProbeHostIgnored", "probe host 10.9.9.9 is not the pod's");
  await events.flush();
  assert.equal(api.calls.length, 1);
  const { namespace, body } = api.calls[0];
  assert.equal(namespace, "shop");
  const meta = body.metadata as { name: string; namespace: string };
  assert.match(meta.name, /^web-1\.[0-9a-f]+$/);
  assert.equal(meta.namespace, "shop");
  assert.deepEqual(body.involvedObject, {
    kind: "Pod",
    apiVersion: "v1",
    name: "web-1",
    namespace: "shop",
    uid: "u-1",
  });
  assert.equal(body.type, "Warning");
  assert.equal(body.reason, "ProbeHostIgnored");
  assert.deepEqual(body.source, { component: "lace", host: "node-a" });
  assert.equal(body.reportingComponent, "lace.io/agent");
  assert.equal(body.reportingInstance, "node-a");
  assert.equal(body.action, "Reconcile");
  assert.equal(body.count, 1);
  assert.ok(body.eventTime instanceof V1MicroTime);
  assert.equal(JSON.parse(JSON.stringify(body)).eventTime, "2024-01-02T03:04:05.678000Z");
  assert.ok(body.firstTimestamp instanceof Date && body.lastTimestamp instanceof Date);
});

Deno.test("a repeated Event is patched with a higher count instead of created again", async () => {
  const api = new FakeApi();
  let now = 1_000_000;
  const events = recorder(api, { now: () => now });
  events.warn(POD, "Conflict", "same");
  now += 1000;
  events.warn(POD, "Conflict", "same");
  events.warn(POD, "Conflict", "other message");
  await events.flush();
  assert.deepEqual(api.calls.map((c) => c.op), ["create", "patch", "create"]);
  assert.equal(api.calls[1].name, (api.calls[0].body.metadata as { name: string }).name);
  assert.deepEqual(api.calls[1].body.ops, [
    { op: "add", path: "/count", value: 2 },
    { op: "add", path: "/lastTimestamp", value: new Date(now).toISOString() },
  ]);
  assert.deepEqual(events.stats, {
    created: 2,
    aggregated: 1,
    rateLimited: 0,
    dropped: 0,
    failed: 0,
  });
});

Deno.test("an object is limited to its burst, refilled over time, and others are unaffected", async () => {
  const api = new FakeApi();
  let now = 0;
  const events = recorder(api, { now: () => now, burst: 3, refillMs: 60_000 });
  for (let i = 0; i < 5; i++) events.warn(POD, "R", `m${i}`);
  events.warn({ ...POD, name: "web-2", uid: "u-2" }, "R", "m");
  await events.flush();
  assert.equal(api.calls.length, 4);
  assert.equal(events.stats.rateLimited, 2);
  now += 60_000;
  events.warn(POD, "R", "later");
  events.warn(POD, "R", "too soon");
  await events.flush();
  assert.equal(api.calls.length, 5);
  assert.equal(events.stats.rateLimited, 3);
});

Deno.test("recording never waits for the API and a full queue drops Events", async () => {
  const api = new FakeApi();
  const gate = Promise.withResolvers<void>();
  api.gate = gate.promise;
  const events = recorder(api, { queueSize: 2 });
  for (let i = 0; i < 5; i++) events.normal(nodeObjectRef("node-a"), "R", `m${i}`);
  // One in flight, two queued, two dropped: all decided synchronously.
  assert.equal(events.stats.dropped, 2);
  gate.resolve();
  await events.flush();
  assert.equal(events.stats.created, 3);
  assert.equal(api.calls[0].namespace, "default", "a Node's Events live in the default namespace");
  assert.equal((api.calls[0].body.involvedObject as { namespace?: string }).namespace, undefined);
});

Deno.test("server failures are retried after a doubling delay, then counted, never thrown", async () => {
  const api = new FakeApi();
  const { clock, timers } = fakeTime();
  let failures = 2;
  api.fail = () => failures-- > 0 ? 503 : undefined;
  const events = recorder(api, { retries: 3, retryDelayMs: 1000, timers });
  events.warn(POD, "R", "retried");
  await clock.tickAsync(999);
  assert.equal(api.calls.length, 1, "the first retry waits the first delay");
  await clock.tickAsync(1);
  assert.equal(api.calls.length, 2);
  await clock.tickAsync(1999);
  assert.equal(api.calls.length, 2, "the second retry waits twice as long");
  await clock.tickAsync(1);
  await events.flush();
  assert.equal(events.stats.created, 1);
  assert.equal(api.calls.length, 3);
  api.fail = () => 500;
  events.warn(POD, "R", "given up");
  await clock.tickAsync(1000 + 2000 + 4000);
  await events.flush();
  assert.equal(events.stats.failed, 1);
  assert.equal(api.calls.length, 3 + 4);
});

Deno.test("a request that never answers is given up after its timeout and retried", async () => {
  const api = new FakeApi();
  const { clock, timers } = fakeTime();
  // The first request hangs for good (a server that died mid-answer, as Deno's fetch sees it).
  api.gate = new Promise(() => {});
  const events = recorder(api, { retryDelayMs: 1000, requestTimeoutMs: 30_000, timers });
  events.warn(POD, "R", "hung once");
  await clock.tickAsync(29_999);
  assert.equal(api.calls.length, 1);
  api.gate = undefined;
  await clock.tickAsync(1 + 1000);
  await events.flush();
  assert.equal(api.calls.length, 2, "retried after the timeout and the first delay");
  assert.equal(events.stats.created, 1);
  events.warn(POD, "R2", "and the queue moves on");
  await events.flush();
  assert.equal(events.stats.created, 2);
});

Deno.test("stop() ends a retry delay at once", async () => {
  const api = new FakeApi();
  const { clock, timers } = fakeTime();
  api.fail = () => 503;
  const events = recorder(api, { retryDelayMs: 60_000, timers });
  events.warn(POD, "R", "failing");
  await clock.tickAsync(0);
  assert.equal(api.calls.length, 1);
  await events.stop();
  assert.equal(api.calls.length, 1);
  assert.equal(clock.countTimers(), 0);
});

Deno.test("a rejected Event (4xx) is not retried", async () => {
  const api = new FakeApi();
  api.fail = () => 422;
  const events = recorder(api);
  events.warn(POD, "R", "invalid");
  await events.flush();
  assert.equal(api.calls.length, 1);
  assert.equal(events.stats.failed, 1);
});

Deno.test("when the aggregated Event is gone, a new one is created with the running count", async () => {
  const api = new FakeApi();
  api.fail = (call) => call.op === "patch" ? 404 : undefined;
  const events = recorder(api);
  events.warn(POD, "R", "same");
  events.warn(POD, "R", "same");
  await events.flush();
  assert.deepEqual(api.calls.map((c) => c.op), ["create", "patch", "create"]);
  assert.equal(api.calls[2].body.count, 2);
});

Deno.test("stop() drops queued Events and later ones are ignored", async () => {
  const api = new FakeApi();
  const gate = Promise.withResolvers<void>();
  api.gate = gate.promise;
  const events = recorder(api);
  events.warn(POD, "R", "a");
  events.warn(POD, "R", "b");
  const stopped = events.stop();
  gate.resolve();
  await stopped;
  events.warn(POD, "R", "c");
  await events.flush();
  assert.equal(api.calls.length, 1);
});

Deno.test("an Event's message carries a pod's escape sequences and bidi characters escaped (issue 24, finding 6)", async () => {
  const api = new FakeApi();
  const events = recorder(api);
  events.warn(POD, "ProbeIgnored", "probe path /x\x1b]52;c;eA==\x07\u009b2J\u202e is odd");
  await events.flush();
  assert.equal(
    (api.calls[0].body as { message: string }).message,
    "probe path /x\\x1b]52;c;eA==\\x07\\x9b2J\\u202e is odd",
  );
});
