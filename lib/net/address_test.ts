import assert from "node:assert/strict";
import { addressFromBytes, canonicalAddress, parseAddress } from "./address.ts";

Deno.test("parseAddress() drops an IPv6 zone and rejects garbage", () => {
  assert.deepEqual(canonicalAddress("fe80::1%eth0"), { family: "ipv6", address: "fe80::1" });
  // The zone after an embedded IPv4 tail, where a number parser would not stop at "%".
  assert.equal(canonicalAddress("64:ff9b::10.0.0.1%eth0").address, "64:ff9b::a00:1");
  assert.throws(
    () => parseAddress("10.0.0.256"),
    new TypeError(`Invalid IP address: "10.0.0.256"`),
  );
  assert.throws(() => parseAddress("pod-a"), new TypeError(`Invalid IP address: "pod-a"`));
});

Deno.test("parseAddress() treats as IPv4 only ::ffff: followed by four bytes after ten zero bytes", () => {
  assert.equal(parseAddress("::ffff:a00:1").family, "ipv4");
  // Each part of the test alone: a non-zero byte in the first ten, byte 10 or byte 11 not 0xff.
  for (const text of ["1::ffff:a00:1", "::1:ffff:a00:1", "::feff:a00:1", "::fffe:a00:1"]) {
    assert.equal(parseAddress(text).family, "ipv6", text);
  }
});

Deno.test("canonicalAddress() reads IPv6 with an embedded IPv4 tail and without ::", () => {
  assert.equal(canonicalAddress("64:ff9b::10.0.0.1").address, "64:ff9b::a00:1");
  assert.equal(canonicalAddress("2001:DB8:0:0:1:0:0:1").address, "2001:db8::1:0:0:1");
  assert.equal(canonicalAddress("1:2:3:4:5:6:7:8").address, "1:2:3:4:5:6:7:8");
});

Deno.test("canonicalAddress() compresses the first longest run of two or more zero words only", () => {
  const cases = [
    ["1:0:0:0:1:0:0:1", "1::1:0:0:1"],
    ["1:0:0:1:0:0:0:1", "1:0:0:1::1"],
    ["1:0:1:0:0:0:0:1", "1:0:1::1"],
    ["1:0:1:1:1:1:0:1", "1:0:1:1:1:1:0:1"],
    ["0:0:1:1:1:1:1:1", "::1:1:1:1:1:1"],
    ["1:1:1:1:1:1:0:0", "1:1:1:1:1:1::"],
  ];
  for (const [text, canonical] of cases) assert.equal(canonicalAddress(text).address, canonical);
});

Deno.test("addressFromBytes() gives the canonical text of the bytes it is given", () => {
  // An IPv4 address's 4 bytes at the start of a 16-byte field, as the maps hold it.
  const v4 = new Uint8Array(16);
  v4.set([10, 244, 1, 7]);
  assert.equal(addressFromBytes("ipv4", v4), "10.244.1.7");
  const v6 = parseAddress("2001:db8:0:0:1:0:0:ab").bytes;
  assert.equal(addressFromBytes("ipv6", v6), "2001:db8::1:0:0:ab");
  // Read as canonicalAddress() reads text: the IPv4-mapped form comes out as the IPv4 address.
  const mapped = new Uint8Array(16);
  mapped.set([0xff, 0xff, 10, 0, 0, 7], 10);
  assert.equal(addressFromBytes("ipv6", mapped), "10.0.0.7");
});
