import assert from "node:assert/strict";
import { keyId, type ProbeEntry, type ProbeKey } from "../probe/key.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import { diffTargets, reconcile, reconcileFailed } from "./reconcile.ts";

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

Deno.test("diffTargets() removes a withdrawn key before deletes are allowed, if held and unwanted", () => {
  const held = entry("10.0.0.1", 80), wanted = entry("10.0.0.2", 80), other = entry("10.0.0.3", 80);
  const withdraw = [held.key, wanted.key, entry("10.0.0.4", 80).key];
  assert.deepEqual(
    diffTargets(desiredOf(wanted), [held, wanted, other], { allowDelete: false, withdraw }),
    { put: [], remove: [held.key] },
  );
  assert.deepEqual(
    diffTargets(desiredOf(wanted), [held, wanted, other], { allowDelete: false }).remove,
    [],
  );
});

Deno.test("diffTargets() removes every unwanted key at a withdrawn address before deletes are allowed", () => {
  const stale = [entry("10.0.0.5", 8080, 1), entry("10.0.0.5", 9000, 1), entry("fd00::5", 9000)];
  const wanted = entry("10.0.0.5", 8081, 2), elsewhere = entry("10.0.0.6", 8080, 1);
  const withdrawAt = new Set(["10.0.0.5", "fd00::5"]);
  assert.deepEqual(
    diffTargets(desiredOf(wanted), [...stale, wanted, elsewhere], {
      allowDelete: false,
      withdraw: [stale[0].key],
      withdrawAt,
    }),
    { put: [], remove: stale.map((e) => e.key) },
  );
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

const now = () => 0;

Deno.test("reconcile() applies the other ops when one fails and reports each", async () => {
  const store = new FlakyStore();
  store.failing.add("10.0.0.1:80");
  const desired = desiredOf(entry("10.0.0.1", 80), entry("10.0.0.2", 80));
  const report = await reconcile("test", store, () => ({ desired, allowDelete: true }), now);
  assert.deepEqual(store.entries().map((e) => keyId(e.key)), ["10.0.0.2:80"]);
  assert.deepEqual(report.ops.map((o) => [o.op, keyId(o.key), o.ok]), [
    ["put", "10.0.0.1:80", false],
    ["put", "10.0.0.2:80", true],
  ]);
  assert.match(report.ops[0].error!, /EPERM on 10\.0\.0\.1:80/);
  assert.equal(reconcileFailed(report), true);
});

Deno.test("reconcile() reports a failing computation without throwing", async () => {
  const store = new FlakyStore();
  const report = await reconcile("test", store, () => {
    throw new Error("cache unavailable");
  }, now);
  assert.equal(report.error, "cache unavailable");
  assert.deepEqual(report.ops, []);
  assert.equal(reconcileFailed(report), true);
});

Deno.test("reconcile() repairs entries deleted, changed or added behind its back", async () => {
  const store = new FlakyStore();
  const desired = desiredOf(entry("10.0.0.1", 80), entry("10.0.0.2", 80));
  const compute = () => ({ desired, allowDelete: true });
  await reconcile("start", store, compute, now);
  store.remove(entry("10.0.0.1", 80).key);
  store.put(entry("10.0.0.2", 80, 5));
  store.put(entry("10.9.9.9", 1));
  const report = await reconcile("resync", store, compute, now);
  const got = store.entries().sort((a, b) => keyId(a.key) < keyId(b.key) ? -1 : 1);
  assert.deepEqual(got, [...desired.values()]);
  assert.equal(report.ops.length, 3);
  assert.equal(reconcileFailed(report), false);
});

Deno.test("reconcile() reports what it reached and how long it took", async () => {
  let t = 100;
  const report = await reconcile(
    "pod",
    new FlakyStore(),
    () => {
      t += 7;
      return { desired: desiredOf(entry("10.0.0.1", 80)), allowDelete: false, conflicts: 2 };
    },
    () => t,
  );
  assert.equal(report.reason, "pod");
  assert.equal(report.durationMs, 7);
  assert.equal(report.desired, 1);
  assert.equal(report.conflicts, 2);
  assert.equal(report.allowDelete, false);
});

Deno.test("reconcile() removes before it puts, so a full map has room for the new entry", async () => {
  const store = new MemoryProbeStore({ capacity: 1 });
  store.put(entry("10.0.0.1", 80));
  const report = await reconcile("test", store, () => ({
    desired: desiredOf(entry("10.0.0.2", 80)),
    allowDelete: true,
  }), now);
  assert.deepEqual(report.ops.map((o) => [o.op, keyId(o.key), o.ok]), [
    ["remove", "10.0.0.1:80", true],
    ["put", "10.0.0.2:80", true],
  ]);
});

Deno.test("reconcile() keeps the errno name of a failed write", async () => {
  const store = new MemoryProbeStore({ capacity: 0 });
  const report = await reconcile("test", store, () => ({
    desired: desiredOf(entry("10.0.0.2", 80)),
    allowDelete: true,
  }), now);
  assert.equal(report.ops[0].code, "E2BIG");
});
