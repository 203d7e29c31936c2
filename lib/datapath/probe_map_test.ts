import assert from "node:assert/strict";
import { forAll, type SeededRandom } from "../../tests/helpers/property.ts";
import { canonicalAddress } from "../net/address.ts";
import {
  decodeHits,
  decodeKey,
  decodeValue,
  encodeHitsInto,
  encodeKey,
  encodeValue,
  KEY_SIZE,
  VALUE_LAYOUT,
  VALUE_SIZE,
} from "./probe_map.ts";

Deno.test("encodeKey() lays out an IPv4 key as the kernel delivers it", () => {
  const key = encodeKey({ family: "ipv4", address: "10.244.1.10", port: 8080 });
  assert.equal(key.length, KEY_SIZE);
  assert.deepEqual(
    Array.from(key),
    [2, 0, 0x1f, 0x90, 10, 244, 1, 10, ...new Array(12).fill(0)],
  );
});

Deno.test("encodeKey() lays out an IPv6 key with the port in network order", () => {
  const key = encodeKey({ family: "ipv6", address: "fd00:244::10", port: 443 });
  assert.deepEqual(Array.from(key.subarray(0, 4)), [10, 0, 0x01, 0xbb]);
  assert.deepEqual(Array.from(key.subarray(4)), [
    0xfd,
    0,
    0x02,
    0x44,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0x10,
  ]);
});

Deno.test("decodeKey() inverts encodeKey() at the port and address extremes", () => {
  for (
    const key of [
      { family: "ipv4" as const, address: "0.0.0.0", port: 1 },
      { family: "ipv4" as const, address: "255.255.255.255", port: 65535 },
      { family: "ipv6" as const, address: "::", port: 80 },
      { family: "ipv6" as const, address: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", port: 8080 },
      { family: "ipv6" as const, address: "2001:db8::1:0:0:1", port: 10250 },
    ]
  ) {
    assert.deepEqual(decodeKey(encodeKey(key)), key);
  }
});

Deno.test("encodeKey() rejects ports outside 1..65535, naming the port", () => {
  for (const port of [0, 65536, -1, 80.5]) {
    assert.throws(
      () => encodeKey({ family: "ipv4", address: "10.0.0.1", port }),
      new RangeError(`Port out of range 1..65535: ${port}`),
    );
  }
});

Deno.test("encodeKey() rejects an address of the other family", () => {
  assert.throws(
    () => encodeKey({ family: "ipv6", address: "10.0.0.1", port: 80 }),
    new TypeError(`Address "10.0.0.1" is not of family ipv6`),
  );
  assert.throws(() => encodeKey({ family: "ipv4", address: "fd00::1", port: 80 }), TypeError);
});

Deno.test("an IPv4-mapped IPv6 address is keyed as its IPv4 address", () => {
  assert.deepEqual(canonicalAddress("::ffff:10.244.1.10"), {
    family: "ipv4",
    address: "10.244.1.10",
  });
  assert.deepEqual(
    encodeKey({ family: "ipv4", address: "::ffff:10.244.1.10", port: 80 }),
    encodeKey({ family: "ipv4", address: "10.244.1.10", port: 80 }),
  );
});

Deno.test("decodeKey() rejects a wrong size or an unknown family", () => {
  assert.throws(
    () => decodeKey(new Uint8Array(KEY_SIZE - 1)),
    new RangeError(`Probe key must be ${KEY_SIZE} bytes`),
  );
  const bad = new Uint8Array(KEY_SIZE);
  bad[0] = 7;
  assert.throws(() => decodeKey(bad), new TypeError("Unknown address family 7"));
});

Deno.test("decodeValue() rejects a wrong size", () => {
  for (const size of [VALUE_SIZE - 1, VALUE_SIZE + 1]) {
    assert.throws(
      () => decodeValue(new Uint8Array(size)),
      new RangeError(`Probe value must be ${VALUE_SIZE} bytes`),
    );
  }
});

Deno.test("encodeValue() keeps the full 32-bit mark in host (little-endian) order", () => {
  const bytes = encodeValue({ networkId: 65535, mark: 0xffff1000 });
  assert.equal(bytes.length, VALUE_SIZE);
  assert.deepEqual(Array.from(bytes), [0x00, 0x10, 0xff, 0xff, 0xff, 0xff, 0, 0]);
  assert.deepEqual(decodeValue(bytes), { networkId: 65535, mark: 0xffff1000 });
});

Deno.test("encodeValue() writes the network id in host (little-endian) order", () => {
  // 0x1234 reads differently byte-swapped (0x3412), unlike 0xffff.
  const bytes = encodeValue({ networkId: 0x1234, mark: 0x12341000 });
  assert.deepEqual(Array.from(bytes), [0x00, 0x10, 0x34, 0x12, 0x34, 0x12, 0, 0]);
  assert.deepEqual(decodeValue(Uint8Array.from([0, 0, 0, 0, 0x34, 0x12, 0, 0])), {
    networkId: 0x1234,
    mark: 0,
  });
});

/** A random address as text (IPv6 in full, random case), with the bytes it stands for. */
function randomAddress(random: SeededRandom): { text: string; bytes: number[]; v6: boolean } {
  if (random.chance(0.5)) {
    const bytes = Array.from({ length: 4 }, () => random.int(0, 255));
    return { text: bytes.join("."), bytes, v6: false };
  }
  // Zero words are common, so runs of them (and "::") get exercised.
  const words = Array.from({ length: 8 }, () => random.chance(0.4) ? 0 : random.int(0, 0xffff));
  const text = words.map((w) => w.toString(16)).map((w) => random.chance(0.5) ? w.toUpperCase() : w)
    .join(":");
  return { text, bytes: words.flatMap((w) => [w >> 8, w & 0xff]), v6: true };
}

Deno.test("property: random valid keys encode to their bytes and decode back (seeded)", () => {
  forAll({ seed: 1000, runs: 2000 }, (random) => {
    const { text, bytes, v6 } = randomAddress(random);
    const mapped = v6 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff &&
      bytes[11] === 0xff;
    const { family, address } = canonicalAddress(text);
    assert.equal(family, v6 && !mapped ? "ipv6" : "ipv4", text);
    if (family === "ipv6") {
      // An independent canonical form: the URL standard's IPv6 serializer (RFC 5952 rules).
      assert.equal(`[${address}]`, new URL(`http://[${text}]/`).hostname, text);
    }
    const port = random.int(1, 65535);
    const encoded = encodeKey({ family, address, port });
    assert.deepEqual(
      Array.from(encoded.subarray(4, family === "ipv6" ? 20 : 8)),
      mapped ? bytes.slice(12) : bytes,
    );
    assert.deepEqual(decodeKey(encoded), { family, address, port });
    assert.deepEqual(canonicalAddress(address), { family, address }, "canonical is a fixed point");
  });
});

Deno.test("property: random marks and network ids survive encodeValue() and decodeValue() (seeded)", () => {
  forAll({ seed: 2000, runs: 2000 }, (random) => {
    const value = { networkId: random.int(0, 0xffff), mark: random.int(0, 0xffffffff) };
    const bytes = encodeValue(value);
    assert.equal(bytes[4] | (bytes[5] << 8), value.networkId, "network id little-endian");
    assert.deepEqual(decodeValue(bytes), value);
  });
});

Deno.test("decodeHits() reads hits from 24 bytes on and none from 23", () => {
  const value = new Uint8Array(VALUE_LAYOUT.size);
  value[8] = 1;
  value[16] = 2;
  assert.deepEqual(decodeHits(value), { hits: 1n, lastHitNs: 2n });
  assert.deepEqual(decodeHits(value.subarray(0, VALUE_LAYOUT.size - 1)), {
    hits: 0n,
    lastHitNs: 0n,
  });
});

Deno.test("encodeHitsInto() fills 24 bytes and leaves 23 untouched", () => {
  const hits = { hits: 0x0102n, lastHitNs: 0x0304n };
  const value = new Uint8Array(VALUE_LAYOUT.size);
  encodeHitsInto(value, hits);
  assert.deepEqual([value[8], value[9], value[16], value[17]], [0x02, 0x01, 0x04, 0x03]);
  const short = new Uint8Array(VALUE_LAYOUT.size - 1);
  encodeHitsInto(short, hits);
  assert.ok(short.every((b) => b === 0));
});
