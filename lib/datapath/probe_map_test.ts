import assert from "node:assert/strict";
import {
  canonicalAddress,
  decodeKey,
  decodeValue,
  encodeKey,
  encodeValue,
  KEY_SIZE,
  keyId,
  parseAddress,
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

Deno.test("encodeKey() rejects ports outside 1..65535", () => {
  for (const port of [0, 65536, -1, 80.5]) {
    assert.throws(() => encodeKey({ family: "ipv4", address: "10.0.0.1", port }), RangeError);
  }
});

Deno.test("encodeKey() rejects an address of the other family", () => {
  assert.throws(() => encodeKey({ family: "ipv6", address: "10.0.0.1", port: 80 }), TypeError);
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

Deno.test("parseAddress() drops an IPv6 zone and rejects garbage", () => {
  assert.equal(parseAddress("fe80::1%eth0").family, "ipv6");
  assert.throws(() => parseAddress("10.0.0.256"), TypeError);
  assert.throws(() => parseAddress("pod-a"), TypeError);
});

Deno.test("decodeKey() rejects a wrong size or an unknown family", () => {
  assert.throws(() => decodeKey(new Uint8Array(KEY_SIZE - 1)), RangeError);
  const bad = new Uint8Array(KEY_SIZE);
  bad[0] = 7;
  assert.throws(() => decodeKey(bad), TypeError);
});

Deno.test("encodeValue() keeps the full 32-bit mark in host (little-endian) order", () => {
  const bytes = encodeValue({ networkId: 65535, mark: 0xffff1000 });
  assert.equal(bytes.length, VALUE_SIZE);
  assert.deepEqual(Array.from(bytes), [0x00, 0x10, 0xff, 0xff, 0xff, 0xff, 0, 0]);
  assert.deepEqual(decodeValue(bytes), { networkId: 65535, mark: 0xffff1000 });
});

Deno.test("keyId() brackets IPv6 addresses so the port stays unambiguous", () => {
  assert.equal(keyId({ family: "ipv6", address: "fd00::1", port: 80 }), "[fd00::1]:80");
  assert.equal(keyId({ family: "ipv4", address: "10.0.0.1", port: 80 }), "10.0.0.1:80");
});
