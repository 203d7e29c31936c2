/**
 * Reading the whole probe map on the real kernel: batched
 * (bpf_map_lookup_batch) and key by key give the same entries, a hash bucket
 * larger than the batch grows the batch instead of failing, and a read while
 * another process changes the map returns every entry present throughout
 * exactly once.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
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

privileged("a hash bucket holding more entries than the batch asks for grows the batch", () => {
  using datapath = filledDatapath(STABLE);
  // One entry per call: 10k entries in 64k buckets put two in some bucket (the kernel answers
  // ENOSPC for it), and the read must go on with a larger batch.
  const raw = datapath.store.map.readAll("auto", 1);
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
