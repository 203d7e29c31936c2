/**
 * Reading the whole probe map on the real kernel: a read is batched
 * (bpf_map_lookup_batch) where the kernel has it, and falls back to key by
 * key, saying so, where it does not; both give the same entries, a hash bucket
 * larger than the batch grows the batch instead of failing, and a read while
 * another process changes the map returns every entry present throughout
 * exactly once.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { type BatchLookup, Errno, kernelBatchLookup } from "../lib/libbpf/mod.ts";
import { setupLogging } from "../lib/log/setup.ts";
import { keyId, type ProbeEntry } from "../lib/probe/key.ts";
import { hostRange, parseCidr } from "../lib/net/cidr.ts";
import { privilegedTests, testPinPath } from "./helpers/sim_world.ts";
import { stableKey } from "./helpers/map_keys.ts";

const privileged = privilegedTests();
const STABLE = 10_000;

/** A fresh datapath (maps only, nothing attached) holding the stable keys; removed on dispose. */
function filledDatapath(count: number): Datapath & Disposable {
  const pinPath = testPinPath();
  const datapath = Datapath.open({ pinPath });
  for (let i = 0; i < count; i++) {
    datapath.store.put({ key: stableKey(i), value: { networkId: 1 + (i % 7), mark: 0x100 + i } });
  }
  return Object.assign(datapath, {
    [Symbol.dispose]() {
      datapath.close();
      uninstall(pinPath);
    },
  });
}

const ids = (entries: ProbeEntry[]) => entries.map((e) => keyId(e.key));
const sorted = (entries: ProbeEntry[]) =>
  entries.map((e) => JSON.stringify([keyId(e.key), e.value])).sort();

privileged("a batched read and a key-by-key read of 10k entries give the same entries", () => {
  using datapath = filledDatapath(STABLE);
  const batched = datapath.store.entries();
  const perEntry = datapath.store.entries("per-entry");
  assert.equal(batched.length, STABLE);
  assert.deepEqual(sorted(batched), sorted(perEntry));
  const want = Array.from({ length: STABLE }, (_, i) => keyId(stableKey(i))).sort();
  assert.deepEqual(ids(batched).sort(), want);
  assert.equal(datapath.store.count(), STABLE);
});

/** The kernel's batch lookup, counting its calls. */
function countedLookup(): { lookup: BatchLookup; calls(): number } {
  let calls = 0;
  return {
    lookup: (...args) => {
      calls++;
      return kernelBatchLookup(...args);
    },
    calls: () => calls,
  };
}

privileged(
  "a read of the probe map on this kernel is batched: a few batch lookups for 10k entries",
  () => {
    using datapath = filledDatapath(STABLE);
    const counted = countedLookup();
    const raw = datapath.store.map.readAll("auto", { batchLookup: counted.lookup });
    assert.equal(raw.via, "batch");
    assert.equal(raw.count, STABLE);
    // 4096 entries a call: 3 calls, a few more where a call stops short at a hash bucket's end.
    assert.ok(counted.calls() >= 3 && counted.calls() <= 8, `${counted.calls()} batch lookups`);
    // The agent's own reads, with the kernel's lookup: batched too, a step per call.
    assert.equal(datapath.store.map.readAll().via, "batch");
    const steps = datapath.store.hitsInSteps(1024);
    let yielded = 0;
    while (!steps.next().done) yielded++;
    assert.ok(yielded >= 9, `the hits read in ${yielded + 1} steps of at most 1024 entries`);
  },
);

/** Runs `fn` with the agent's log lines (info and above) collected in `messages`. */
function withLog<T>(fn: (messages: string[]) => T): T {
  const messages: string[] = [];
  setupLogging("info", "json", (bytes) => {
    messages.push(JSON.parse(new TextDecoder().decode(bytes)).message);
  });
  try {
    return fn(messages);
  } finally {
    setupLogging("info", "json", () => {});
  }
}

for (const errno of ["EINVAL", "ENOTSUPP", "EOPNOTSUPP"] as const) {
  privileged(
    `a kernel without batch lookups (${errno}) is read key by key, said once, and asked once`,
    () => {
      using datapath = filledDatapath(1_000);
      let calls = 0;
      const refusing: BatchLookup = () => (calls++, -Errno[errno]);
      withLog((messages) => {
        const first = datapath.store.map.readAll("auto", { batchLookup: refusing });
        const second = datapath.store.map.readAll("auto", { batchLookup: refusing });
        assert.deepEqual([first.via, second.via], ["per-entry", "per-entry"]);
        assert.equal(first.count, 1_000);
        assert.equal(calls, 1, "the refusal is learnt for the map type");
        const said = messages.filter((m) => m.includes("has no batched lookup"));
        assert.equal(said.length, 1, messages.join("\n"));
        assert.match(said[0], new RegExp(`\\b${errno}\\b.*reads go key by key`));
      });
      // What a test's lookup learnt leaves the kernel's alone.
      assert.equal(datapath.store.map.readAll().via, "batch");
    },
  );
}

privileged(
  "a batch lookup failing for another reason fails the read instead of going key by key",
  () => {
    using datapath = filledDatapath(100);
    const failing: BatchLookup = () => -Errno.EPERM;
    assert.throws(
      () => datapath.store.map.readAll("auto", { batchLookup: failing }),
      /bpf_map_lookup_batch/,
    );
  },
);

privileged("a hash bucket holding more entries than the batch asks for grows the batch", () => {
  using datapath = filledDatapath(STABLE);
  // One entry per call: 10k entries in 64k buckets put two in some bucket (the kernel answers
  // ENOSPC for it), and the read must go on with a larger batch.
  const raw = datapath.store.map.readAll("auto", { firstBatch: 1 });
  assert.equal(raw.count, STABLE);
  const keys = new Set(Array.from({ length: raw.count }, (_, i) => raw.key(i).join(",")));
  assert.equal(keys.size, STABLE);
});

/** Reads the map again and again while a child process changes it; each read must hold every stable key once. */
async function readsUnderChurn(
  mode: "auto" | "per-entry",
  rewrite: boolean,
  rounds: number,
): Promise<void> {
  using datapath = filledDatapath(2_000);
  const pin = `${datapath.layoutDir}/probe_targets`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      fileURLToPath(new URL("./helpers/map_churn.ts", import.meta.url)),
      pin,
      "2000",
      ...(rewrite ? ["rewrite"] : []),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    assert.match(value ?? "", /ready/, "the churning process did not start");
    reader.releaseLock();
    const want = Array.from({ length: 2_000 }, (_, i) => keyId(stableKey(i)));
    for (let round = 0; round < rounds; round++) {
      const got = ids(datapath.store.entries(mode));
      const counts = new Map<string, number>();
      for (const id of got) counts.set(id, (counts.get(id) ?? 0) + 1);
      const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
      assert.deepEqual(twice, [], `round ${round}: keys read more than once`);
      const missing = want.filter((id) => !counts.has(id));
      assert.deepEqual(missing, [], `round ${round}: stable keys missing`);
    }
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
}

privileged(
  "a batched read while another process adds, removes and rewrites entries holds every stable entry once",
  () => readsUnderChurn("auto", true, 100),
);

privileged(
  "a key-by-key read while another process adds and removes entries holds every stable entry once",
  () => readsUnderChurn("per-entry", false, 100),
);

privileged("the pod ranges trie (a map type without batch lookups) reads back as written", () => {
  using datapath = filledDatapath(0);
  const ranges = [
    parseCidr("10.244.0.0/16", 1),
    parseCidr("fd00:244::/64", 2),
    hostRange("10.1.2.3", 3),
  ];
  datapath.unmatched!.syncRanges(ranges);
  const got = datapath.unmatched!.ranges().map((r) => JSON.stringify(r)).sort();
  assert.deepEqual(got, ranges.map((r) => JSON.stringify(r)).sort());
});
