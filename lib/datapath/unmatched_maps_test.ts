import assert from "node:assert/strict";
import type { BpfMap, BpfObject } from "../libbpf/mod.ts";
import { parseCidr, type PodRange } from "../net/cidr.ts";
import { computeRangeFilter, decodeRangeFilter, RANGE_FILTER_LAYOUT } from "./range_filter.ts";
import { UnmatchedMaps } from "./unmatched_maps.ts";

/** A map in memory that logs every write as "<map> <op>", the filter's with its slots' prefixes. */
class FakeMap {
  readonly entries_ = new Map<string, [Uint8Array, Uint8Array]>();
  /** The filter's value after each write, the first before any. */
  readonly values: Uint8Array[] = [];
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
    this.values.push(value.slice());
    const { active, slots } = decodeRangeFilter(value);
    const [a, b] = slots.map((f) => `/${f.ipv4.prefix} /${f.ipv6.prefix}`);
    this.log.push(`range_filter active ${active}: ${a} | ${b}`);
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
  const filter = all.get("range_filter");
  filter?.entries_.set("0,0,0,0", [new Uint8Array(4), new Uint8Array(RANGE_FILTER_LAYOUT.size)]);
  filter?.values.push(new Uint8Array(RANGE_FILTER_LAYOUT.size));
  const object = {
    hasMap: (n: string) => all.has(n),
    map: (n: string) => all.get(n) as unknown as BpfMap,
  } as unknown as BpfObject;
  return { unmatched: UnmatchedMaps.of(object)!, log, values: filter?.values ?? [] };
}

const RANGES: PodRange[] = [parseCidr("10.244.0.0/16"), parseCidr("fd00:10:244::/56", 1)];

Deno.test("new ranges: the new filter fills the other slot, the trie changes, then `active` flips to it", () => {
  const { unmatched, log } = maps(true);
  unmatched.syncRanges(RANGES);
  assert.deepEqual(log, [
    "range_filter active 0: /0 /0 | /16 /56",
    "pod_ranges put",
    "pod_ranges put",
    "range_filter active 1: /0 /0 | /16 /56",
  ]);
  assert.deepEqual(unmatched.rangeFilter(), computeRangeFilter(RANGES));
  // Fewer ranges: into slot 0 this time, slot 1 as it was until the flip.
  log.length = 0;
  unmatched.syncRanges([RANGES[0]]);
  assert.deepEqual(log, [
    "range_filter active 1: /16 /64 | /16 /56",
    "pod_ranges delete",
    "range_filter active 0: /16 /64 | /16 /56",
  ]);
  assert.deepEqual(unmatched.rangeFilter(), computeRangeFilter([RANGES[0]]));
});

/**
 * What may_be_in_range() in bpf/lace.bpf.c loads, the first loads (`active`, the prefix) from
 * one value and the word of the bits from a later one: whether that word is the one the filter
 * whose prefix it loaded has, for every word it may load. A prefix of 0 loads no word.
 */
function pairsOneFilter(first: Uint8Array, later: Uint8Array): boolean {
  const a = decodeRangeFilter(first);
  const b = decodeRangeFilter(later);
  return (["ipv4", "ipv6"] as const).every((family) => {
    const loaded = a.slots[a.active][family];
    const words = b.slots[a.active][family].bits;
    return loaded.prefix === 0 || loaded.bits.every((x, i) => x === words[i]);
  });
}

Deno.test("a connect reading the filter while the agent writes it pairs one filter's prefix and bits", () => {
  const { unmatched, values } = maps(true);
  const sets: PodRange[][] = [
    RANGES,
    [RANGES[0]],
    [parseCidr("10.245.0.0/16"), parseCidr("fd00:245::/48", 1)],
    RANGES,
  ];
  for (const set of sets) unmatched.syncRanges(set);
  const flipped = (k: number) =>
    decodeRangeFilter(values[k]).active !== decodeRangeFilter(values[k - 1]).active;
  // Whether writes i+1..j hold a flip and, after it, the next change's fill.
  const flipThenFill = (i: number, j: number) => {
    const k = values.findIndex((_, k) => k > i && k <= j && flipped(k));
    return k > 0 && values.some((_, m) => m > k && m <= j && !flipped(m));
  };
  let stale = 0;
  // The connect loads `active` and the prefix after write i, a word of the bits after write j.
  for (let i = 0; i < values.length; i++) {
    for (let j = i; j < values.length; j++) {
      if (pairsOneFilter(values[i], values[j])) continue;
      assert(
        flipThenFill(i, j),
        `a connect reading across writes ${i + 1}..${j} pairs two filters`,
      );
      stale++;
    }
  }
  assert(stale > 0, "a connect that stalls past a flip and the next fill does pair two: the limit");
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
