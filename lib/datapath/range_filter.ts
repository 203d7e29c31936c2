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
import { type Family, parseAddress } from "../net/address.ts";
import type { StructLayout } from "./probe_map.ts";
import type { PodRange } from "../net/cidr.ts";

/** LACE_FILTER_BITS: each family's bitmap has 2^FILTER_BITS bits. */
export const FILTER_BITS = 14;
const FILTER_BYTES = (1 << FILTER_BITS) / 8;
/** How many of an address's first bits a bucket can use: all of IPv4, IPv6's first 64. */
const MAX_PREFIX: Record<Family, number> = { ipv4: 32, ipv6: 64 };
const FAMILY_INDEX: Record<Family, number> = { ipv4: 0, ipv6: 1 };

/** struct lace_range_filter_slot: prefix u32[2], bits u64[2][FILTER_WORDS]. */
export const RANGE_FILTER_SLOT_LAYOUT = {
  size: 8 + 2 * FILTER_BYTES,
  fields: { prefix: { offset: 0, size: 8 }, bits: { offset: 8, size: 2 * FILTER_BYTES } },
} as const satisfies StructLayout;

/** struct lace_range_filter: active u32, pad u32, slot lace_range_filter_slot[2]. */
export const RANGE_FILTER_LAYOUT = {
  size: 8 + 2 * RANGE_FILTER_SLOT_LAYOUT.size,
  fields: {
    active: { offset: 0, size: 4 },
    pad: { offset: 4, size: 4 },
    slot: { offset: 8, size: 2 * RANGE_FILTER_SLOT_LAYOUT.size },
  },
} as const satisfies StructLayout;

/** One family's filter: prefix 0 means "no filter" (every address asks the trie). */
export interface FamilyFilter {
  prefix: number;
  /** Bit i of the bitmap is bit i % 8 of byte i / 8 (the u64 words, little-endian). */
  bits: Uint8Array;
}

export type RangeFilter = Record<Family, FamilyFilter>;

/**
 * An address's first 64 bits as two unsigned 32-bit halves (IPv4: its 32 bits, then zeros), as
 * the program reads them. Numbers, not BigInt, which is far slower at a full trie (65,536 ranges).
 */
function first64(bytes: Uint8Array): readonly [number, number] {
  const word = (i: number) =>
    (((bytes[i] ?? 0) << 24) | ((bytes[i + 1] ?? 0) << 16) | ((bytes[i + 2] ?? 0) << 8) |
      (bytes[i + 3] ?? 0)) >>> 0;
  return [word(0), word(4)];
}

/** The 64-bit value (hi, lo) shifted right by `n` (0..63): its low 32 bits. */
function low32ShiftedRight(hi: number, lo: number, n: number): number {
  if (n === 0) return lo;
  if (n >= 32) return hi >>> (n - 32);
  return ((lo >>> n) | (hi << (32 - n))) >>> 0;
}

/** The bucket of an address's first 64 bits (hi, lo) under prefix L (1..64). */
export function bucketOf(hi: number, lo: number, prefix: number): number {
  // top = first64 >> (64 - L), folded: the xor of its 14-bit pieces.
  const shift = 64 - prefix;
  let idx = 0;
  for (let piece = 0; shift + piece < 64; piece += FILTER_BITS) {
    idx ^= low32ShiftedRight(hi, lo, shift + piece);
  }
  return idx & ((1 << FILTER_BITS) - 1);
}

/**
 * The first 64 bits of the addresses of one computation of the filter, kept for the next, so
 * that it parses only the addresses new since: parsing every address of a full trie (65,536)
 * took longer than the rest of writing the ranges. Holds only the last computation's addresses.
 */
export class AddressBits {
  #last = new Map<string, readonly [number, number]>();
  #next = new Map<string, readonly [number, number]>();

  of(address: string): readonly [number, number] {
    const bits = this.#last.get(address) ?? first64(parseAddress(address).bytes);
    this.#next.set(address, bits);
    return bits;
  }

  /** Forgets every address not asked for since the last call. */
  settle(): void {
    this.#last = this.#next;
    this.#next = new Map();
  }
}

/** The filter of a set of ranges: what the agent writes whenever the ranges change. */
export function computeRangeFilter(
  ranges: readonly PodRange[],
  known = new AddressBits(),
): RangeFilter {
  const out = {} as RangeFilter;
  for (const family of ["ipv4", "ipv6"] as const) {
    const mine = ranges.filter((r) => r.family === family);
    let prefix = MAX_PREFIX[family];
    for (const r of mine) prefix = Math.min(prefix, r.prefix);
    const bits = new Uint8Array(FILTER_BYTES);
    // A /0 range covers every address: no bucket can be clear.
    if (prefix === 0) {
      out[family] = { prefix: 0, bits };
      continue;
    }
    for (const r of mine) {
      const b = bucketOf(...known.of(r.address), prefix);
      bits[b >> 3] |= 1 << (b & 7);
    }
    out[family] = { prefix, bits };
  }
  known.settle();
  return out;
}

/** Whether an address passes the filter (may lie in a range): the program's check. */
export function filterPasses(filter: RangeFilter, address: string): boolean {
  const { family, bytes } = parseAddress(address);
  const f = filter[family];
  if (f.prefix === 0) return true;
  const b = bucketOf(...first64(bytes), f.prefix);
  return (f.bits[b >> 3] & (1 << (b & 7))) !== 0;
}

/** Which slot the program reads, and the filter in each slot. */
export interface RangeFilterValue {
  active: 0 | 1;
  slots: [RangeFilter, RangeFilter];
}

/** The offset of slot `i` in the map's value. */
function slotOffset(i: number): number {
  return RANGE_FILTER_LAYOUT.fields.slot.offset + RANGE_FILTER_SLOT_LAYOUT.size * i;
}

/** The slot the value's `active` names (its lowest bit, as the program reads it). */
function activeSlot(value: Uint8Array): 0 | 1 {
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  return (view.getUint32(RANGE_FILTER_LAYOUT.fields.active.offset, true) & 1) as 0 | 1;
}

/** Writes `filter` into slot `i` of `value` (little-endian, as the other codecs). */
function writeSlot(value: Uint8Array, i: number, filter: RangeFilter): void {
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const { prefix, bits } = RANGE_FILTER_SLOT_LAYOUT.fields;
  for (const family of ["ipv4", "ipv6"] as const) {
    const f = FAMILY_INDEX[family];
    view.setUint32(slotOffset(i) + prefix.offset + 4 * f, filter[family].prefix, true);
    value.set(filter[family].bits, slotOffset(i) + bits.offset + FILTER_BYTES * f);
  }
}

function readSlot(value: Uint8Array, i: number): RangeFilter {
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const { prefix, bits } = RANGE_FILTER_SLOT_LAYOUT.fields;
  const out = {} as RangeFilter;
  for (const family of ["ipv4", "ipv6"] as const) {
    const f = FAMILY_INDEX[family];
    const start = slotOffset(i) + bits.offset + FILTER_BYTES * f;
    out[family] = {
      prefix: view.getUint32(slotOffset(i) + prefix.offset + 4 * f, true),
      bits: value.slice(start, start + FILTER_BYTES),
    };
  }
  return out;
}

/** A map value with `filter` in slot `active` and the other slot zero (it asks the trie). */
export function encodeRangeFilter(filter: RangeFilter, active: 0 | 1 = 0): Uint8Array {
  const out = new Uint8Array(RANGE_FILTER_LAYOUT.size);
  new DataView(out.buffer).setUint32(RANGE_FILTER_LAYOUT.fields.active.offset, active, true);
  writeSlot(out, active, filter);
  return out;
}

/** Decodes the map's value. */
export function decodeRangeFilter(value: Uint8Array): RangeFilterValue {
  checkSize(value);
  return { active: activeSlot(value), slots: [readSlot(value, 0), readSlot(value, 1)] };
}

function checkSize(value: Uint8Array): void {
  if (value.length !== RANGE_FILTER_LAYOUT.size) {
    throw new RangeError(
      `A range filter value has ${RANGE_FILTER_LAYOUT.size} bytes, not ${value.length}: ` +
        "the object and this agent disagree on struct lace_range_filter; rebuild them together",
    );
  }
}

/**
 * The two writes that put `want` in front of the program, or undefined when
 * the slot it reads holds `want` already (struct lace_range_filter in
 * bpf/lace.h says why two): `fill` is `have` with the other slot holding
 * `want`, every byte of `active` and of the slot it names as they were, so a
 * program reading that slot meanwhile loads the same bytes; `flip` is `fill`
 * with `active` naming the other slot. No value yet counts as zero: `active`
 * 0, both slots off.
 */
export function filterWrites(
  have: Uint8Array | undefined,
  want: RangeFilter,
): { fill: Uint8Array; flip: Uint8Array } | undefined {
  if (have) checkSize(have);
  const fill = have?.slice() ?? new Uint8Array(RANGE_FILTER_LAYOUT.size);
  const active = activeSlot(fill);
  const next = (1 - active) as 0 | 1;
  writeSlot(fill, next, want);
  if (sameBytes(slotBytes(fill, active), slotBytes(fill, next))) return undefined;
  const flip = fill.slice();
  new DataView(flip.buffer).setUint32(RANGE_FILTER_LAYOUT.fields.active.offset, next, true);
  return { fill, flip };
}

function slotBytes(value: Uint8Array, i: number): Uint8Array {
  return value.subarray(slotOffset(i), slotOffset(i) + RANGE_FILTER_SLOT_LAYOUT.size);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
