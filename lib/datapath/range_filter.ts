/**
 * The pre-check the datapath makes before the pod ranges trie (struct
 * lace_range_filter in bpf/lace.h): per family, the shortest range prefix L
 * and one bit per bucket, a bucket being an address's top L bits xor-folded
 * into FILTER_BITS bits. Every range sets its bucket, so every address inside
 * a range passes; a clear bit proves an address is outside every range and
 * the program skips the trie. Folding is exact while L ≤ FILTER_BITS; past
 * it, two prefixes may share a bucket, which costs a trie lookup, never a
 * count. Pure: bpf/lace.bpf.c's may_be_in_range() computes the same buckets.
 */
import { type Family, parseAddress, type StructLayout } from "./probe_map.ts";
import type { PodRange } from "./pod_ranges.ts";

/** LACE_FILTER_BITS: each family's bitmap has 2^FILTER_BITS bits. */
export const FILTER_BITS = 14;
const FILTER_BYTES = (1 << FILTER_BITS) / 8;
/** How many of an address's first bits a bucket can use: all of IPv4, IPv6's first 64. */
const MAX_PREFIX: Record<Family, number> = { ipv4: 32, ipv6: 64 };
const FAMILY_INDEX: Record<Family, number> = { ipv4: 0, ipv6: 1 };

/** struct lace_range_filter: prefix u32[2], bits u64[2][FILTER_WORDS]. */
export const RANGE_FILTER_LAYOUT = {
  size: 8 + 2 * FILTER_BYTES,
  fields: { prefix: { offset: 0, size: 8 }, bits: { offset: 8, size: 2 * FILTER_BYTES } },
} as const satisfies StructLayout;

/** One family's filter: prefix 0 means "no filter" (every address asks the trie). */
export interface FamilyFilter {
  prefix: number;
  /** Bit i of the bitmap is bit i % 8 of byte i / 8 (the u64 words, little-endian). */
  bits: Uint8Array;
}

export type RangeFilter = Record<Family, FamilyFilter>;

/** An address's first 64 bits (IPv4: its 32 bits, then zeros), as the program reads them. */
function first64(bytes: Uint8Array): bigint {
  let v = 0n;
  for (let i = 0; i < 8; i++) v = (v << 8n) | BigInt(bytes[i] ?? 0);
  return v;
}

/** The bucket of an address's first 64 bits under prefix L (1..64). */
export function bucketOf(top64: bigint, prefix: number): number {
  const top = top64 >> BigInt(64 - prefix);
  let idx = 0n;
  for (let shift = 0; shift < 64; shift += FILTER_BITS) idx ^= top >> BigInt(shift);
  return Number(idx & BigInt((1 << FILTER_BITS) - 1));
}

/** The filter of a set of ranges: what the agent writes whenever the ranges change. */
export function computeRangeFilter(ranges: readonly PodRange[]): RangeFilter {
  const out = {} as RangeFilter;
  for (const family of ["ipv4", "ipv6"] as const) {
    const mine = ranges.filter((r) => r.family === family);
    const prefix = Math.min(MAX_PREFIX[family], ...mine.map((r) => r.prefix));
    const bits = new Uint8Array(FILTER_BYTES);
    // A /0 range covers every address: no bucket can be clear.
    if (prefix === 0) {
      out[family] = { prefix: 0, bits };
      continue;
    }
    for (const r of mine) {
      const b = bucketOf(first64(parseAddress(r.address).bytes), prefix);
      bits[b >> 3] |= 1 << (b & 7);
    }
    out[family] = { prefix, bits };
  }
  return out;
}

/** Whether an address passes the filter (may lie in a range): the program's check. */
export function filterPasses(filter: RangeFilter, address: string): boolean {
  const { family, bytes } = parseAddress(address);
  const f = filter[family];
  if (f.prefix === 0) return true;
  const b = bucketOf(first64(bytes), f.prefix);
  return (f.bits[b >> 3] & (1 << (b & 7))) !== 0;
}

/** Encodes a filter as the map's value (little-endian, as the other codecs). */
export function encodeRangeFilter(filter: RangeFilter): Uint8Array {
  const out = new Uint8Array(RANGE_FILTER_LAYOUT.size);
  const view = new DataView(out.buffer);
  const { prefix, bits } = RANGE_FILTER_LAYOUT.fields;
  for (const family of ["ipv4", "ipv6"] as const) {
    const i = FAMILY_INDEX[family];
    view.setUint32(prefix.offset + 4 * i, filter[family].prefix, true);
    out.set(filter[family].bits, bits.offset + FILTER_BYTES * i);
  }
  return out;
}

/** An encoded filter with both prefixes 0: turned off (the program asks the trie), bits kept. */
export function filterTurnedOff(value: Uint8Array): Uint8Array {
  const { offset, size } = RANGE_FILTER_LAYOUT.fields.prefix;
  const out = value.slice();
  out.fill(0, offset, offset + size);
  return out;
}

/** Decodes the map's value. */
export function decodeRangeFilter(bytes: Uint8Array): RangeFilter {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { prefix, bits } = RANGE_FILTER_LAYOUT.fields;
  const out = {} as RangeFilter;
  for (const family of ["ipv4", "ipv6"] as const) {
    const i = FAMILY_INDEX[family];
    const start = bits.offset + FILTER_BYTES * i;
    out[family] = {
      prefix: view.getUint32(prefix.offset + 4 * i, true),
      bits: bytes.slice(start, start + FILTER_BYTES),
    };
  }
  return out;
}
