import assert from "node:assert/strict";
import type { BpfMap } from "./libbpf/map.ts";
import type { BpfObject } from "./libbpf/object.ts";
import { parseCidr, type PodRange } from "./pod_ranges.ts";
import { computeRangeFilter, decodeRangeFilter, RANGE_FILTER_LAYOUT } from "./range_filter.ts";
import { UnmatchedMaps } from "./unmatched_maps.ts";

/** A map in memory that logs every write as "<map> <op> [filter prefixes]". */
class FakeMap {
  readonly entries_ = new Map<string, [Uint8Array, Uint8Array]>();
  constructor(readonly name: string, readonly log: string[]) {}
  entries(): [Uint8Array, Uint8Array][] {
    return [...this.entries_.values()];
  }
  lookup(key: Uint8Array): Uint8Array | undefined {
    return this.entries_.get(key.join())?.[1].slice();
  }
  update(key: Uint8Array, value: Uint8Array): void {
    this.entries_.set(key.join(), [key.slice(), value.slice()]);
    if (this.name !== "range_filter") return this.log.push(`${this.name} put`), undefined;
    const f = decodeRangeFilter(value);
    this.log.push(`range_filter /${f.ipv4.prefix} /${f.ipv6.prefix}`);
  }
  delete(key: Uint8Array): boolean {
    this.log.push(`${this.name} delete`);
    return this.entries_.delete(key.join());
  }
}

function maps(withFilter: boolean) {
  const log: string[] = [];
  const all = new Map(
    ["pod_ranges", "network_counts", "reports", ...(withFilter ? ["range_filter"] : [])].map(
      (n) => [n, new FakeMap(n, log)],
    ),
  );
  // An array map starts zeroed: the filter is off.
  all.get("range_filter")?.entries_.set("0,0,0,0", [
    new Uint8Array(4),
    new Uint8Array(RANGE_FILTER_LAYOUT.size),
  ]);
  const object = {
    hasMap: (n: string) => all.has(n),
    map: (n: string) => all.get(n) as unknown as BpfMap,
  } as unknown as BpfObject;
  return { unmatched: UnmatchedMaps.of(object)!, log };
}

const RANGES: PodRange[] = [parseCidr("10.244.0.0/16"), parseCidr("fd00:10:244::/56", 1)];

Deno.test("new ranges: the filter goes off, gets its new bits, the trie changes, then it goes on", () => {
  const { unmatched, log } = maps(true);
  unmatched.syncRanges(RANGES);
  assert.deepEqual(log, [
    "range_filter /0 /0",
    "range_filter /0 /0",
    "pod_ranges put",
    "pod_ranges put",
    "range_filter /16 /56",
  ]);
  assert.deepEqual(unmatched.rangeFilter(), computeRangeFilter(RANGES));
  // Fewer ranges: off (the old bits), off with the new bits, the trie, on.
  log.length = 0;
  unmatched.syncRanges([RANGES[0]]);
  assert.deepEqual(log, [
    "range_filter /0 /0",
    "range_filter /0 /0",
    "pod_ranges delete",
    "range_filter /16 /64",
  ]);
});

Deno.test("ranges that leave the filter as it is write only the trie", () => {
  const { unmatched, log } = maps(true);
  unmatched.syncRanges(RANGES);
  log.length = 0;
  // Another /32 in the same /16 bucket: the filter's bytes do not change.
  unmatched.syncRanges([...RANGES, parseCidr("10.244.1.10/32", 2)]);
  assert.deepEqual(log, ["pod_ranges put"]);
  log.length = 0;
  unmatched.syncRanges([...RANGES, parseCidr("10.244.1.10/32", 2)]);
  assert.deepEqual(log, []);
});

Deno.test("an object without the filter map gets its trie written, nothing else", () => {
  const { unmatched, log } = maps(false);
  unmatched.syncRanges(RANGES);
  assert.deepEqual(log, ["pod_ranges put", "pod_ranges put"]);
  assert.equal(unmatched.rangeFilter(), undefined);
});
