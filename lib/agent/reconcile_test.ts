import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { keyId, type ProbeEntry, type ProbeKey } from "../datapath/probe_map.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import {
  diffTargets,
  type ReconcileInput,
  type ReconcileReport,
  ReconcileRunner,
} from "./reconcile.ts";

function entry(address: string, port: number, networkId = 1): ProbeEntry {
  return {
    key: { family: address.includes(":") ? "ipv6" : "ipv4", address, port },
    value: { networkId, mark: 0x1000 | (networkId << 16) },
  };
}

function desiredOf(...entries: ProbeEntry[]): Map<string, ProbeEntry> {
  return new Map(entries.map((e) => [keyId(e.key), e]));
}

Deno.test("diffTargets() puts missing entries and those whose value differs", () => {
  const { put, remove } = diffTargets(
    desiredOf(entry("10.0.0.1", 80), entry("10.0.0.2", 80, 2), entry("fd00::1", 80)),
    [entry("10.0.0.1", 80), entry("10.0.0.2", 80, 3)],
    { allowDelete: true },
  );
  assert.deepEqual(put.map((e) => keyId(e.key)), ["10.0.0.2:80", "[fd00::1]:80"]);
  assert.equal(put[0].value.networkId, 2);
  assert.deepEqual(remove, []);
});

Deno.test("diffTargets() removes unwanted entries only when deletes are allowed", () => {
  const current = [entry("10.0.0.1", 80), entry("10.0.0.9", 9)];
  const desired = desiredOf(entry("10.0.0.1", 80));
  assert.deepEqual(diffTargets(desired, current, { allowDelete: false }), { put: [], remove: [] });
  assert.deepEqual(diffTargets(desired, current, { allowDelete: true }).remove, [
    entry("10.0.0.9", 9).key,
  ]);
});

Deno.test("diffTargets() yields nothing when the store already matches", () => {
  const all = [entry("10.0.0.1", 80), entry("fd00::2", 443, 9)];
  assert.deepEqual(diffTargets(desiredOf(...all), all, { allowDelete: true }), {
    put: [],
    remove: [],
  });
});

Deno.test("diffTargets() puts an entry whose mark alone differs", () => {
  // An agent restarted with a new --probe-mark must rewrite every entry.
  const want = entry("10.0.0.1", 80, 7);
  const stale = { key: want.key, value: { networkId: 7, mark: 0x2000 | (7 << 16) } };
  assert.deepEqual(diffTargets(desiredOf(want), [stale], { allowDelete: true }), {
    put: [want],
    remove: [],
  });
});

Deno.test("diffTargets() puts an entry whose network id alone differs", () => {
  const want = entry("10.0.0.1", 80, 7);
  const stale = { key: want.key, value: { networkId: 8, mark: want.value.mark } };
  assert.deepEqual(diffTargets(desiredOf(want), [stale], { allowDelete: true }), {
    put: [want],
    remove: [],
  });
});

Deno.test("diffTargets() returns puts and removes sorted by key whatever the input order", () => {
  const wanted = ["10.0.0.3", "10.0.0.1", "fd00::1", "10.0.0.2"].map((a) => entry(a, 80));
  const unwanted = ["10.0.1.9", "10.0.1.1", "fd00::9", "10.0.1.5"].map((a) => entry(a, 80));
  const { put, remove } = diffTargets(desiredOf(...wanted), unwanted, { allowDelete: true });
  assert.deepEqual(put.map((e) => keyId(e.key)), [
    "10.0.0.1:80",
    "10.0.0.2:80",
    "10.0.0.3:80",
    "[fd00::1]:80",
  ]);
  assert.deepEqual(remove.map(keyId), [
    "10.0.1.1:80",
    "10.0.1.5:80",
    "10.0.1.9:80",
    "[fd00::9]:80",
  ]);
});

/** A store whose put fails for chosen keys, to test per-op error handling. */
class FlakyStore extends MemoryProbeStore {
  failing = new Set<string>();
  override put(e: ProbeEntry): void {
    if (this.failing.has(keyId(e.key))) throw new Error(`EPERM on ${keyId(e.key)}`);
    super.put(e);
  }
  override remove(key: ProbeKey): void {
    super.remove(key);
  }
}

function setup(input: () => ReconcileInput | Promise<ReconcileInput>) {
  const clock = FakeTimers.createClock();
  const store = new FlakyStore();
  const reports: ReconcileReport[] = [];
  let computes = 0;
  const runner = new ReconcileRunner({
    store,
    compute: () => {
      computes++;
      return input();
    },
    debounceMs: 10,
    resyncMs: 60_000,
    backoffMs: { initial: 100, max: 1000 },
    observer: { onReconcile: (r) => reports.push(r) },
    timers: {
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      clearTimeout: (id) => clock.clearTimeout(id as number),
      now: () => clock.now,
    },
  });
  return { clock, store, reports, runner, computes: () => computes };
}

Deno.test("ReconcileRunner coalesces a burst of triggers into one run after the debounce", async () => {
  const desired = desiredOf(entry("10.0.0.1", 80));
  const t = setup(() => ({ desired, allowDelete: true }));
  t.runner.start();
  for (let i = 0; i < 50; i++) t.runner.trigger("pod");
  await t.clock.tickAsync(9);
  assert.equal(t.computes(), 0);
  await t.clock.tickAsync(1);
  await t.runner.idle();
  assert.equal(t.computes(), 1);
  assert.equal(t.store.entries().length, 1);
  assert.match(t.reports[0].reason, /start/);
  await t.runner.stop();
});

Deno.test("ReconcileRunner runs once more when triggered during a run, never two at once", async () => {
  let release: () => void = () => {};
  let active = 0, maxActive = 0;
  const t = setup(async () => {
    active++;
    maxActive = Math.max(maxActive, active);
    await new Promise<void>((r) => release = r);
    active--;
    return { desired: new Map(), allowDelete: false };
  });
  t.runner.start();
  await t.clock.tickAsync(10);
  assert.equal(t.computes(), 1);
  t.runner.trigger("a");
  t.runner.trigger("b");
  await t.clock.tickAsync(100);
  assert.equal(t.computes(), 1, "no second run while the first is still running");
  release();
  await t.runner.idle();
  await t.clock.tickAsync(10);
  assert.equal(t.computes(), 2);
  release();
  await t.runner.idle();
  assert.equal(maxActive, 1);
  await t.runner.stop();
});

Deno.test("ReconcileRunner resync repairs an entry deleted or changed behind its back", async () => {
  const desired = desiredOf(entry("10.0.0.1", 80), entry("10.0.0.2", 80));
  const t = setup(() => ({ desired, allowDelete: true }));
  t.runner.start();
  await t.clock.tickAsync(10);
  await t.runner.idle();
  t.store.remove(entry("10.0.0.1", 80).key);
  t.store.put(entry("10.0.0.2", 80, 5));
  t.store.put(entry("10.9.9.9", 1));
  await t.clock.tickAsync(60_000);
  await t.runner.idle();
  const got = t.store.entries().sort((a, b) => keyId(a.key) < keyId(b.key) ? -1 : 1);
  assert.deepEqual(got, [...desired.values()]);
  assert.equal(t.reports.at(-1)!.reason, "resync");
  assert.equal(t.reports.at(-1)!.ops.length, 3);
  await t.runner.stop();
});

Deno.test("ReconcileRunner applies the other ops when one fails, then retries with backoff", async () => {
  const desired = desiredOf(entry("10.0.0.1", 80), entry("10.0.0.2", 80));
  const t = setup(() => ({ desired, allowDelete: true }));
  t.store.failing.add("10.0.0.1:80");
  t.runner.start();
  await t.clock.tickAsync(10);
  await t.runner.idle();
  assert.deepEqual(t.store.entries().map((e) => keyId(e.key)), ["10.0.0.2:80"]);
  assert.deepEqual(t.reports[0].ops.map((o) => o.ok), [false, true]);
  await t.clock.tickAsync(100); // first retry, still failing
  await t.runner.idle();
  assert.equal(t.reports.length, 2);
  t.store.failing.clear();
  await t.clock.tickAsync(199);
  assert.equal(t.reports.length, 2, "the second retry waits twice as long");
  await t.clock.tickAsync(1);
  await t.runner.idle();
  assert.equal(t.reports.length, 3);
  assert.equal(t.store.entries().length, 2);
  await t.runner.stop();
});

Deno.test("ReconcileRunner reports a failing computation and retries it", async () => {
  let fail = true;
  const t = setup(() => {
    if (fail) throw new Error("cache unavailable");
    return { desired: desiredOf(entry("10.0.0.1", 80)), allowDelete: true };
  });
  t.runner.start();
  await t.clock.tickAsync(10);
  await t.runner.idle();
  assert.equal(t.reports[0].error, "cache unavailable");
  fail = false;
  await t.clock.tickAsync(100);
  await t.runner.idle();
  assert.equal(t.store.entries().length, 1);
  await t.runner.stop();
});

Deno.test("ReconcileRunner.runNow() resolves after the store holds the new entries", async () => {
  let desired = desiredOf();
  const t = setup(() => ({ desired, allowDelete: true }));
  t.runner.start();
  desired = desiredOf(entry("10.0.0.7", 8080));
  const report = await t.runner.runNow("cni");
  assert.equal(report.ops.length, 1);
  assert.deepEqual(t.store.entries(), [entry("10.0.0.7", 8080)]);
  await t.runner.stop();
});

Deno.test("ReconcileRunner.stop() cancels timers and leaves the store as it is", async () => {
  let desired = desiredOf(entry("10.0.0.1", 80));
  const t = setup(() => ({ desired, allowDelete: true }));
  t.runner.start();
  await t.clock.tickAsync(10);
  await t.runner.idle();
  await t.runner.stop();
  desired = desiredOf();
  t.runner.trigger();
  await t.clock.tickAsync(120_000);
  assert.equal(t.computes(), 1);
  assert.equal(t.store.entries().length, 1);
  assert.equal(t.clock.countTimers(), 0);
});
