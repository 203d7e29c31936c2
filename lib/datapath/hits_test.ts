import assert from "node:assert/strict";
import { HitsIndex, hitsView, type RawHitEntries } from "./hits.ts";
import {
  decodeHits,
  encodeHitsInto,
  encodeKey,
  encodeValue,
  KEY_SIZE,
  type ProbeHits,
  VALUE_LAYOUT,
  VALUE_SIZE,
} from "./probe_map.ts";
import type { ProbeKey } from "../probe/key.ts";

const S = 1_000_000_000n;

Deno.test("hitsView() gives the age of the last hit in seconds, to a tenth", () => {
  assert.deepEqual(hitsView({ hits: 7n, lastHitNs: 100n * S }, 112n * S + 340_000_000n), {
    hits: 7,
    lastHitAgeSeconds: 12.3,
  });
});

Deno.test("hitsView() says null for a target the kubelet never connected to", () => {
  assert.deepEqual(hitsView({ hits: 0n, lastHitNs: 0n }, 5n * S), {
    hits: 0,
    lastHitAgeSeconds: null,
  });
});

Deno.test("hitsView() reads a last hit a coarse tick after now as age 0", () => {
  assert.equal(hitsView({ hits: 1n, lastHitNs: 10n * S + 4n }, 10n * S).lastHitAgeSeconds, 0);
});

Deno.test("decodeHits() reads zero hits from a value of the layout before hits (ABI 1)", () => {
  assert.deepEqual(decodeHits(new Uint8Array(VALUE_SIZE).fill(0xff)), { hits: 0n, lastHitNs: 0n });
});

Deno.test("encodeHitsInto() writes hits after the agent's fields, little-endian, as decodeHits() reads them", () => {
  const value = new Uint8Array(VALUE_LAYOUT.size);
  encodeHitsInto(value, { hits: 0x0102n, lastHitNs: 0xffff_0000_0000_0001n });
  assert.deepEqual(Array.from(value.subarray(0, VALUE_SIZE)), new Array(VALUE_SIZE).fill(0));
  assert.equal(value[VALUE_LAYOUT.fields.hits.offset], 0x02);
  assert.deepEqual(decodeHits(value), { hits: 0x0102n, lastHitNs: 0xffff_0000_0000_0001n });
});

/** A raw read as the kernel's batch call fills it: keys and full-layout values, in two buffers. */
class FakeRead implements RawHitEntries {
  count = 0;
  readonly keySize = KEY_SIZE;
  readonly valueSize = VALUE_LAYOUT.size;
  keys = new Uint8Array(0);
  values = new Uint8Array(0);
  push(key: ProbeKey, hits: ProbeHits): void {
    const keys = new Uint8Array((this.count + 1) * this.keySize);
    const values = new Uint8Array((this.count + 1) * this.valueSize);
    keys.set(this.keys);
    values.set(this.values);
    keys.set(encodeKey(key), this.count * this.keySize);
    const value = values.subarray(this.count * this.valueSize, (this.count + 1) * this.valueSize);
    value.set(encodeValue({ networkId: 1, mark: 0x100 }));
    encodeHitsInto(value, hits);
    this.keys = keys; // a grown read replaces its buffers, as the map's reader does
    this.values = values;
    this.count++;
  }
}

const v4 = (i: number, port = 80): ProbeKey => ({
  family: "ipv4",
  address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
  port,
});

Deno.test("HitsIndex finds each key's hits in a raw read, and none for a key it does not hold", () => {
  const read = new FakeRead();
  const index = new HitsIndex(4);
  for (let i = 0; i < 300; i++) read.push(v4(i), { hits: BigInt(i), lastHitNs: BigInt(i) * S });
  read.push({ family: "ipv6", address: "fd00::1", port: 8080 }, { hits: 9n, lastHitNs: 1n });
  index.add(read);
  for (let i = 0; i < 300; i++) {
    assert.deepEqual(index.get(v4(i)), { hits: BigInt(i), lastHitNs: BigInt(i) * S });
  }
  assert.deepEqual(index.get({ family: "ipv6", address: "fd00::1", port: 8080 }), {
    hits: 9n,
    lastHitNs: 1n,
  });
  assert.equal(index.get(v4(1, 81)), undefined, "another port");
  assert.equal(index.get(v4(300)), undefined, "another address");
  assert.equal(
    index.get({ family: "ipv4", address: "10.0.0.1", port: 8 }),
    undefined,
    "another short port",
  );
});

Deno.test("HitsIndex indexes a read as it grows, step by step, with its buffers replaced", () => {
  const read = new FakeRead();
  const index = new HitsIndex(65_536);
  read.push(v4(1), { hits: 1n, lastHitNs: 1n });
  index.add(read);
  assert.equal(index.get(v4(2)), undefined);
  read.push(v4(2), { hits: 2n, lastHitNs: 2n });
  index.add(read);
  assert.deepEqual(index.get(v4(1)), { hits: 1n, lastHitNs: 1n });
  assert.deepEqual(index.get(v4(2)), { hits: 2n, lastHitNs: 2n });
});

Deno.test("HitsIndex keeps the first of a key a read gives twice, and forgets a read replaced by another", () => {
  const read = new FakeRead();
  read.push(v4(1), { hits: 1n, lastHitNs: 1n });
  read.push(v4(1), { hits: 5n, lastHitNs: 5n });
  const index = new HitsIndex(2);
  index.add(read);
  assert.deepEqual(index.get(v4(1)), { hits: 1n, lastHitNs: 1n });
  const next = new FakeRead();
  next.push(v4(7), { hits: 7n, lastHitNs: 7n });
  index.add(next);
  assert.equal(index.get(v4(1)), undefined);
  assert.deepEqual(index.get(v4(7)), { hits: 7n, lastHitNs: 7n });
});

Deno.test("HitsIndex tells apart two keys that hash alike, IPv4 and IPv6", () => {
  // hashKey() of 10.0.107.237 and 10.2.219.40 (port 80) are both 1943229276; of fd00::5:b29a and
  // fd00::9:a4d9 both 1686380748.
  for (
    const [a, b] of [
      ["10.0.107.237", "10.2.219.40"],
      ["fd00::5:b29a", "fd00::9:a4d9"],
    ] as const
  ) {
    const family = a.includes(":") ? "ipv6" : "ipv4";
    const keyA: ProbeKey = { family, address: a, port: 80 };
    const keyB: ProbeKey = { family, address: b, port: 80 };
    const read = new FakeRead();
    read.push(keyA, { hits: 1n, lastHitNs: 1n });
    const index = new HitsIndex(16);
    index.add(read);
    assert.equal(index.get(keyB), undefined, `${b} is not in the read`);
    read.push(keyB, { hits: 2n, lastHitNs: 2n });
    index.add(read);
    assert.deepEqual(index.get(keyA), { hits: 1n, lastHitNs: 1n });
    assert.deepEqual(index.get(keyB), { hits: 2n, lastHitNs: 2n });
    assert.equal(index.get({ ...keyA, port: 81 }), undefined);
  }
});
