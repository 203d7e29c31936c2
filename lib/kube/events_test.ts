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

/** Events dropped for any reason. */
function dropped(events: EventRecorder): number {
  return Object.values(events.stats.dropped).reduce((a, b) => a + b, 0);
}

/** A pod `name` in `namespace`, its own object (and so its own rate limit). */
function pod(namespace: string, name: string): ObjectRef {
  return { kind: "Pod", apiVersion: "v1", name, namespace, uid: `${namespace}-${name}` };
}

function recorder(
  api: FakeApi,
  extra: Partial<ConstructorParameters<typeof EventRecorder>[0]> = {},
) {
  // Fake timers unless a test brings its own: the drop log's summaries wait on them.
  const { timers } = fakeTime();
  return new EventRecorder({ api, nodeName: "node-a", retryDelayMs: 1, timers, ...extra });
}

/** The API held until `open()`: what is recorded meanwhile waits in the queue. */
function gated(api: FakeApi): { open: () => void } {
  const gate = Promise.withResolvers<void>();
  api.gate = gate.promise;
  return {
    open: () => {
      gate.resolve();
      api.gate = undefined;
    },
  };
}

/** The "namespace/name reason" of each Event created, in order. */
function created(api: FakeApi): string[] {
  return api.calls.filter((c) => c.op === "create").map((c) => {
    const o = c.body.involvedObject as ObjectRef;
    return `${o.namespace ?? ""}/${o.name} ${c.body.reason}`;
  });
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
  assert.equal(events.stats.created, 2);
  assert.equal(events.stats.aggregated, 1);
  assert.equal(dropped(events), 0);
});

Deno.test("an object is limited to its burst, refilled over time, and others are unaffected", async () => {
  const api = new FakeApi();
  let now = 0;
  const events = recorder(api, { now: () => now, burst: 3, refillMs: 60_000 });
  for (let i = 0; i < 5; i++) events.warn(POD, "R", `m${i}`);
  events.warn({ ...POD, name: "web-2", uid: "u-2" }, "R", "m");
  await events.flush();
  assert.equal(api.calls.length, 4);
  assert.equal(events.stats.dropped["rate-limited"], 2);
  now += 60_000;
  events.warn(POD, "R", "later");
  events.warn(POD, "R", "too soon");
  await events.flush();
  assert.equal(api.calls.length, 5);
  assert.equal(events.stats.dropped["rate-limited"], 3);
});

Deno.test("recording never waits for the API and a full queue drops Events", async () => {
  const api = new FakeApi();
  const gate = Promise.withResolvers<void>();
  api.gate = gate.promise;
  const events = recorder(api, { queueSize: 2 });
  for (let i = 0; i < 5; i++) events.normal(nodeObjectRef("node-a"), "R", `m${i}`);
  // One in flight, two queued, two dropped: all decided synchronously.
  assert.equal(events.stats.dropped["queue-full"], 2);
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
  assert.equal(events.stats.dropped["api-error"], 1);
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
  assert.equal(events.stats.dropped["api-error"], 1);
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

Deno.test("an Event's message carries a pod's escape sequences and bidi characters escaped", async () => {
  const api = new FakeApi();
  const events = recorder(api);
  events.warn(POD, "ProbeIgnored", "probe path /x\x1b]52;c;eA==\x07\u009b2J\u202e is odd");
  await events.flush();
  assert.equal(
    (api.calls[0].body as { message: string }).message,
    "probe path /x\\x1b]52;c;eA==\\x07\\x9b2J\\u202e is odd",
  );
});

Deno.test("a flood of Events from one namespace does not drop another namespace's Event", async () => {
  const api = new FakeApi();
  const gate = gated(api);
  const reasons: string[] = [];
  const events = recorder(api, { onDrop: (reason) => reasons.push(reason) });
  // 5000 pods of namespace "attacker" each with an Event of its own (no rate limit or
  // coalescing helps), then the victim's refusal.
  for (let i = 0; i < 5000; i++) events.warn(pod("attacker", `p-${i}`), "ProbeIgnored", "bad");
  events.warn(pod("victim", "web"), "AttachRefused", "not attached");
  events.warn(nodeObjectRef("node-a"), "KubeletCgroupMismatch", "moved");
  assert.equal(events.stats.dropped["namespace-full"], 5000 - 1 - 100);
  assert.equal(events.queued, 100 + 2, "the attacker's share, the victim's and the node's");
  assert.ok(reasons.every((r) => r === "namespace-full") && reasons.length === 4899);
  gate.open();
  await events.flush();
  // Round robin: the one in flight, then one of each namespace waiting.
  assert.deepEqual(created(api).slice(0, 4), [
    "attacker/p-0 ProbeIgnored",
    "attacker/p-1 ProbeIgnored",
    "victim/web AttachRefused",
    "/node-a KubeletCgroupMismatch",
  ]);
  assert.equal(events.stats.created, 103);
});

Deno.test("many flooding namespaces cannot fill the queue against one more: the newest of the longest makes room", async () => {
  const api = new FakeApi();
  const gate = gated(api);
  const events = recorder(api, { queueSize: 50, namespaceQueueSize: 10 });
  events.warn(pod("first", "in-flight"), "R", "m");
  for (let ns = 0; ns < 20; ns++) {
    for (let i = 0; i < 10; i++) events.warn(pod(`flood-${ns}`, `p-${i}`), "R", "m");
  }
  assert.equal(events.queued, 50, "the global bound holds");
  const { displaced } = events.stats.dropped;
  assert.equal(events.stats.dropped["queue-full"] + displaced, 150);
  events.warn(pod("victim", "web"), "AttachRefused", "not attached");
  assert.equal(events.queued, 50, "still the global bound");
  assert.equal(events.stats.dropped.displaced, displaced + 1);
  gate.open();
  await events.flush();
  assert.ok(created(api).includes("victim/web AttachRefused"));
});

Deno.test("repeats of a waiting Event raise its count instead of taking places or tokens", async () => {
  const api = new FakeApi();
  const gate = gated(api);
  let now = 1_000_000;
  // Three tokens: one for each Event that takes a place, none for the repeats.
  const events = recorder(api, { now: () => now, queueSize: 2, burst: 3 });
  events.warn(POD, "R", "in flight");
  for (let i = 0; i < 500; i++) {
    now += 10;
    events.warn(POD, "R", "same");
  }
  events.warn(POD, "R", "another");
  assert.equal(events.queued, 2);
  assert.equal(events.stats.coalesced, 499);
  assert.equal(dropped(events), 0);
  gate.open();
  await events.flush();
  assert.deepEqual(api.calls.map((c) => [c.op, c.body.count]), [
    ["create", 1],
    ["create", 500],
    ["create", 1],
  ]);
  const same = api.calls[1].body;
  assert.deepEqual(same.firstTimestamp, new Date(1_000_010));
  assert.deepEqual(same.lastTimestamp, new Date(1_005_000));
  // Sent, it is no longer waiting: the next repeat (a token later) is a patch of the count.
  now += 5 * 60_000;
  events.warn(POD, "R", "same");
  await events.flush();
  assert.deepEqual(api.calls[3].body.ops, [
    { op: "add", path: "/count", value: 501 },
    { op: "add", path: "/lastTimestamp", value: new Date(now).toISOString() },
  ]);
});

Deno.test("an object reference longer than any Kubernetes name is dropped as invalid", async () => {
  const api = new FakeApi();
  const events = recorder(api);
  events.warn(pod("shop", "x".repeat(254)), "R", "m");
  events.warn(pod("y".repeat(64 * 1024), "web"), "R", "m");
  await events.flush();
  assert.equal(api.calls.length, 0);
  assert.equal(events.stats.dropped.invalid, 2);
});

Deno.test("stop() counts what was waiting as dropped at shutdown", async () => {
  const api = new FakeApi();
  const gate = gated(api);
  const events = recorder(api);
  for (let i = 0; i < 5; i++) events.warn(pod("shop", `p-${i}`), "R", "m");
  const stopped = events.stop();
  gate.open();
  await stopped;
  assert.equal(events.stats.dropped.shutdown, 5, "four waiting and the one in flight");
});

Deno.test("stop() does not wait for a request that never answers", async () => {
  const api = new FakeApi();
  api.gate = new Promise(() => {});
  const { clock, timers } = fakeTime();
  const events = recorder(api, { timers });
  events.warn(POD, "R", "hung");
  await events.stop();
  assert.equal(events.stats.dropped.shutdown, 1);
  assert.equal(clock.countTimers(), 0, "the request's timeout is cleared too");
});
