import assert from "node:assert/strict";
import { inRanges, parseCidr, PodRangeSet } from "./cidr.ts";

Deno.test("parseCidr() reads IPv4 and IPv6 ranges in canonical form", () => {
  assert.deepEqual(parseCidr("10.244.0.0/16"), {
    family: "ipv4",
    address: "10.244.0.0",
    prefix: 16,
    networkId: 0,
  });
  assert.deepEqual(parseCidr("FD00:0:0::/56", 3), {
    family: "ipv6",
    address: "fd00::",
    prefix: 56,
    networkId: 3,
  });
});

Deno.test("parseCidr() refuses host bits, a bad prefix and a bad address, saying which", () => {
  assert.throws(
    () => parseCidr("10.244.1.0/16"),
    /host bits are set \(did you mean 10.244.0.0\/16\?\)/,
  );
  assert.throws(() => parseCidr("10.244.0.0/33"), /the prefix must be 0..32/);
  assert.throws(() => parseCidr("10.244.0.0/-1"), /the prefix must be 0..32/);
  assert.throws(() => parseCidr("10.244.0.0"), /expected ADDRESS\/PREFIX/);
  assert.throws(() => parseCidr("10.244.0/16"), /is not an IP address/);
});

Deno.test("inRanges() holds an address inside one of the ranges, of its own family only", () => {
  const ranges = [parseCidr("10.244.0.0/16"), parseCidr("fd00:244::/64")];
  assert.equal(inRanges("10.244.1.10", ranges), true);
  assert.equal(inRanges("10.245.0.1", ranges), false);
  assert.equal(inRanges("10.98.0.1", ranges), false);
  assert.equal(inRanges("fd00:244::10", ranges), true);
  assert.equal(inRanges("FD00:244:0::10", ranges), true);
  assert.equal(inRanges("fd00:245::10", ranges), false);
  // An IPv4-mapped address is the IPv4 address the connect6 program looks up.
  assert.equal(inRanges("::ffff:10.244.3.4", ranges), true);
  assert.equal(inRanges("::ffff:10.98.0.1", ranges), false);
  assert.equal(inRanges("not an address", ranges), false);
  assert.equal(inRanges("10.244.1.10", []), false);
  assert.equal(inRanges("192.0.2.1", [parseCidr("0.0.0.0/0")]), true);
  assert.equal(inRanges("2001:db8::1", [parseCidr("0.0.0.0/0")]), false);
});

Deno.test("PodRangeSet answers as inRanges() does, again and again", () => {
  const set = new PodRangeSet([parseCidr("10.244.0.0/16"), parseCidr("fd00:244::/64")]);
  for (let i = 0; i < 2; i++) {
    assert.equal(set.has("10.244.1.10"), true);
    assert.equal(set.has("::ffff:10.244.1.10"), true);
    assert.equal(set.has("10.98.0.1"), false);
    assert.equal(set.has("fd00:244::10"), true);
    assert.equal(set.has("junk"), false);
  }
  assert.equal(new PodRangeSet([]).has("10.244.1.10"), false);
});
