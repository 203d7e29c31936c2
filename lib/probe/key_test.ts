import assert from "node:assert/strict";
import { keyId, markFor, networkMask } from "./key.ts";

Deno.test("keyId() brackets IPv6 addresses so the port stays unambiguous", () => {
  assert.equal(keyId({ family: "ipv6", address: "fd00::1", port: 80 }), "[fd00::1]:80");
  assert.equal(keyId({ family: "ipv4", address: "10.0.0.1", port: 80 }), "10.0.0.1:80");
});

Deno.test("markFor() puts the probe flag and the network id in the contract's places", () => {
  const c = { probeMark: 0x1000, markShift: 16 };
  assert.equal(markFor(c, 1), 0x11000);
  assert.equal(markFor(c, 0xffff), 0xffff1000);
  assert.equal(markFor({ probeMark: 0x1, markShift: 8 }, 0x12), 0x1201);
});

Deno.test("markFor() refuses network ids outside 1..65535", () => {
  for (const id of [0, -1, 65536, 1.5, NaN]) {
    assert.throws(
      () => markFor({ probeMark: 0x1000, markShift: 16 }, id),
      new RangeError(`Network id out of range 1..65535: ${id}`),
    );
  }
});

Deno.test("networkMask() covers exactly 16 bits above the shift", () => {
  assert.equal(networkMask({ markShift: 16 }), 0xffff0000);
  assert.equal(networkMask({ markShift: 0 }), 0xffff);
});
