import assert from "node:assert/strict";
import { hitsByKey, hitsOf, hitsView } from "./hits.ts";
import { decodeHits, encodeHitsInto, VALUE_LAYOUT, VALUE_SIZE } from "./probe_map.ts";

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

Deno.test("hitsOf() gives no hits for a key the map does not hold", () => {
  const byKey = hitsByKey([{
    key: { family: "ipv4", address: "10.0.0.1", port: 80 },
    value: { networkId: 1, mark: 1 },
    hits: { hits: 3n, lastHitNs: S },
  }], 2n * S);
  assert.deepEqual(hitsOf(byKey, { family: "ipv4", address: "10.0.0.1", port: 80 }), {
    hits: 3,
    lastHitAgeSeconds: 1,
  });
  assert.deepEqual(hitsOf(byKey, { family: "ipv4", address: "10.0.0.1", port: 81 }), {
    hits: 0,
    lastHitAgeSeconds: null,
  });
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
