import assert from "node:assert/strict";
import { forAll, type SeededRandom } from "../../tests/helpers/property.ts";
import { parseCidr, type PodRange } from "../net/cidr.ts";
import { parseAddress } from "../net/address.ts";
import {
  AddressBits,
  bucketOf,
  computeRangeFilter,
  decodeRangeFilter,
  encodeRangeFilter,
  FILTER_BITS,
  filterPasses,
  filterWrites,
  RANGE_FILTER_LAYOUT,
  RANGE_FILTER_SLOT_LAYOUT,
} from "./range_filter.ts";

/** An address as text from its bytes. */
function text(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join(".");
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return words.join(":");
}

function randomBytes(r: SeededRandom, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => r.int(0, 255));
}

/** The bytes with every bit past `prefix` zero. */
function masked(bytes: Uint8Array, prefix: number): Uint8Array {
  return bytes.map((b, i) => b & ((0xff << (8 - Math.max(0, Math.min(8, prefix - i * 8)))) & 0xff));
}

/** A random address inside `range`: its prefix bits, then random ones. */
function inside(r: SeededRandom, range: PodRange): string {
  const base = parseAddress(range.address).bytes;
  const rand = randomBytes(r, base.length);
  return text(
    base.map((b, i) => b | (rand[i] & ~masked(Uint8Array.of(0xff), range.prefix - i * 8)[0])),
  );
}

/** Whether `address` lies in `range`, as the LPM trie decides it. */
function inRange(range: PodRange, address: string): boolean {
  const a = parseAddress(address);
  if (a.family !== range.family) return false;
  const want = parseAddress(range.address).bytes;
  return masked(a.bytes, range.prefix).every((b, i) => b === want[i]);
}

function randomRange(r: SeededRandom): PodRange {
  const family = r.chance(0.5) ? "ipv4" : "ipv6";
  const bits = family === "ipv4" ? 32 : 128;
  // Mostly realistic prefixes (pod CIDRs, host ranges), sometimes any.
  const prefix = r.chance(0.7)
    ? r.pick(family === "ipv4" ? [8, 12, 16, 24, 32] : [48, 56, 64, 128])
    : r.int(1, bits);
  const bytes = masked(randomBytes(r, bits / 8), prefix);
  return parseCidr(`${text(bytes)}/${prefix}`, r.int(0, 65535));
}

Deno.test("every address inside any range passes the filter (the trie's semantics)", () => {
  forAll({ seed: 2801, runs: 300 }, (r) => {
    const ranges = Array.from({ length: r.int(1, 12) }, () => randomRange(r));
    const filter = computeRangeFilter(ranges);
    for (let i = 0; i < 20; i++) {
      const range = r.pick(ranges);
      const address = inside(r, range);
      assert(inRange(range, address), `generator: ${address} in ${range.address}/${range.prefix}`);
      assert(filterPasses(filter, address), `${address} (in ${range.address}/${range.prefix})`);
    }
  });
});

Deno.test("a filter computed with the addresses of the last one kept equals one computed afresh", () => {
  const known = new AddressBits();
  forAll({ seed: 2803, runs: 100 }, (r) => {
    const ranges = Array.from({ length: r.int(0, 12) }, () => randomRange(r));
    assert.deepEqual(computeRangeFilter(ranges, known), computeRangeFilter(ranges));
  });
});

Deno.test("while the shortest prefix fits the bitmap, exactly the addresses in a range pass", () => {
  forAll({ seed: 2802, runs: 200 }, (r) => {
    const family = r.chance(0.5) ? "ipv4" : "ipv6";
    const prefix = r.int(1, FILTER_BITS);
    const ranges = Array.from({ length: r.int(1, 4) }, () => {
      const bytes = masked(randomBytes(r, family === "ipv4" ? 4 : 16), prefix);
      return parseCidr(`${text(bytes)}/${prefix}`, 1);
    });
    const filter = computeRangeFilter(ranges);
    assert.equal(filter[family].prefix, prefix);
    for (let i = 0; i < 50; i++) {
      const address = text(randomBytes(r, family === "ipv4" ? 4 : 16));
      assert.equal(
        filterPasses(filter, address),
        ranges.some((range) => inRange(range, address)),
        `${address} against ${ranges.map((x) => `${x.address}/${x.prefix}`).join(", ")}`,
      );
    }
  });
});

Deno.test("a node's pod CIDRs let the API server's and a registry's addresses skip the trie", () => {
  const filter = computeRangeFilter([
    parseCidr("10.244.0.0/16"),
    parseCidr("10.244.1.10/32", 1),
    parseCidr("fd00:10:244::/56"),
  ]);
  assert.equal(filter.ipv4.prefix, 16);
  assert.equal(filter.ipv6.prefix, 56);
  // 10.244/16 is bucket 0x0af4 (16 bits folded into 14: 0x0af4 ^ 0x0af4 >> 14).
  assert.deepEqual(
    Array.from(filter.ipv4.bits.entries()).filter(([, b]) => b !== 0),
    [[0x0af4 >> 3, 1 << (0x0af4 & 7)]],
  );
  assert(filterPasses(filter, "10.244.200.3"));
  assert(filterPasses(filter, "fd00:10:244:0:ff::1"));
  assert(!filterPasses(filter, "10.96.0.1"));
  assert(!filterPasses(filter, "192.168.1.20"));
  assert(!filterPasses(filter, "fd00:10:96::1"));
  assert(!filterPasses(filter, "2001:db8::1"));
});

Deno.test("a family without ranges passes nothing; a /0 range turns its family's filter off", () => {
  const none = computeRangeFilter([parseCidr("10.244.0.0/16")]);
  assert(none.ipv6.prefix > 0);
  assert(none.ipv6.bits.every((b) => b === 0));
  assert(!filterPasses(none, "fd00::1"));
  const all = computeRangeFilter([parseCidr("::/0"), parseCidr("10.244.0.0/16")]);
  assert.equal(all.ipv6.prefix, 0);
  assert(filterPasses(all, "2001:db8::1"));
  assert(!filterPasses(all, "10.96.0.1"));
});

Deno.test("bucketOf() folds the top `prefix` bits into FILTER_BITS bits", () => {
  assert.equal(bucketOf(0x0af4_0000, 0, 16), 0x0af4 ^ (0x0af4 >> FILTER_BITS));
  // All 64 bits set: five pieces, four of 14 ones (cancelling in pairs) and one of 8.
  assert.equal(bucketOf(0xffff_ffff, 0xffff_ffff, 64), 0xff);
  assert.equal(bucketOf(0x8000_0000, 0, 1), 1);
  // Across the halves: 0x0123456789abcdef >> 24 = 0x0123456789, xor of its 14-bit pieces.
  const top = 0x0123456789n;
  let want = 0n;
  for (let s = 0n; s < 64n; s += 14n) want ^= top >> s;
  assert.equal(bucketOf(0x0123_4567, 0x89ab_cdef, 40), Number(want & 0x3fffn));
});

Deno.test("the filter encodes as struct lace_range_filter, in the slot `active` names", () => {
  const filter = computeRangeFilter([parseCidr("10.244.0.0/16"), parseCidr("fd00::/8")]);
  const off = computeRangeFilter([parseCidr("::/0"), parseCidr("0.0.0.0/0")]);
  for (const active of [0, 1] as const) {
    const bytes = encodeRangeFilter(filter, active);
    assert.equal(bytes.length, RANGE_FILTER_LAYOUT.size);
    const view = new DataView(bytes.buffer);
    const slot = RANGE_FILTER_LAYOUT.fields.slot.offset + RANGE_FILTER_SLOT_LAYOUT.size * active;
    assert.equal(view.getUint32(0, true), active);
    assert.equal(view.getUint32(slot, true), 16);
    assert.equal(view.getUint32(slot + 4, true), 8);
    const decoded = decodeRangeFilter(bytes);
    assert.equal(decoded.active, active);
    assert.deepEqual(decoded.slots[active], filter);
    assert.deepEqual(decoded.slots[1 - active], off, "the other slot is zero: it asks the trie");
  }
  // The program reads the lowest bit of `active`.
  const odd = encodeRangeFilter(filter, 1);
  new DataView(odd.buffer).setUint32(0, 3, true);
  assert.equal(decodeRangeFilter(odd).active, 1);
  assert.throws(() => decodeRangeFilter(new Uint8Array(8 + 2 * 2048)), /8216 bytes, not 4104/);
});

/** The bytes of slot `i` of a map value. */
function slot(value: Uint8Array, i: number): Uint8Array {
  const start = RANGE_FILTER_LAYOUT.fields.slot.offset + RANGE_FILTER_SLOT_LAYOUT.size * i;
  return value.slice(start, start + RANGE_FILTER_SLOT_LAYOUT.size);
}

Deno.test("a new filter is written into the other slot, the active slot's bytes unchanged, then flipped", () => {
  const first = computeRangeFilter([parseCidr("10.244.0.0/16"), parseCidr("fd00:10:244::/56")]);
  const second = computeRangeFilter([parseCidr("10.245.0.0/16")]);
  // A new object's zeroed map: `active` 0, slot 0 off.
  let have: Uint8Array = new Uint8Array(RANGE_FILTER_LAYOUT.size);
  for (const [want, from] of [[first, 0], [second, 1], [first, 0]] as const) {
    const writes = filterWrites(have, want);
    assert(writes, `a new filter in slot ${from} is written`);
    const { fill, flip } = writes;
    assert.equal(decodeRangeFilter(fill).active, from, "the fill leaves `active`");
    assert.deepEqual(fill.slice(0, 8), have.slice(0, 8));
    assert.deepEqual(slot(fill, from), slot(have, from), "the fill leaves the active slot's bytes");
    assert.deepEqual(decodeRangeFilter(fill).slots[1 - from], want);
    assert.equal(decodeRangeFilter(flip).active, 1 - from, "the flip names the other slot");
    assert.deepEqual(flip.slice(4), fill.slice(4), "the flip changes `active` alone");
    have = flip;
  }
});

Deno.test("the filter the program reads already: no writes; the same in the other slot only: both", () => {
  const want = computeRangeFilter([parseCidr("10.244.0.0/16")]);
  assert.equal(filterWrites(encodeRangeFilter(want, 1), want), undefined);
  // A flip that failed: the other slot holds the filter, the program still reads the old one.
  const { fill } = filterWrites(encodeRangeFilter(want, 1), computeRangeFilter([]))!;
  const retried = filterWrites(fill, computeRangeFilter([]));
  assert(retried);
  assert.deepEqual(retried.fill, fill);
  assert.equal(decodeRangeFilter(retried.flip).active, 0);
  // No value yet counts as a zeroed one.
  assert.equal(decodeRangeFilter(filterWrites(undefined, want)!.flip).active, 1);
});
