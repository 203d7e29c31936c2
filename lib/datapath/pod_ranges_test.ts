import assert from "node:assert/strict";
import {
  decodeNetworkCounts,
  decodeRange,
  decodeReport,
  diffRanges,
  encodeRangeKey,
  encodeRangeValue,
  hostRange,
  inRanges,
  NETWORK_COUNTS_LAYOUT,
  parseCidr,
  PodRangeSet,
  REPORT_LAYOUT,
} from "./pod_ranges.ts";

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

Deno.test("a range's trie key counts the family byte in its prefix and round-trips", () => {
  const r = parseCidr("10.244.0.0/16", 7);
  const key = encodeRangeKey(r);
  assert.equal(new DataView(key.buffer).getUint32(0, true), 8 + 16);
  assert.equal(key[4], 2, "AF_INET");
  assert.deepEqual(Array.from(key.subarray(5, 9)), [10, 244, 0, 0]);
  assert.deepEqual(decodeRange(key, encodeRangeValue(r)), r);
  const h = hostRange("fd00::1", 2);
  assert.deepEqual(decodeRange(encodeRangeKey(h), encodeRangeValue(h)), h);
});

Deno.test("decodeReport() reads the destination in network order and the network id", () => {
  const bytes = new Uint8Array(REPORT_LAYOUT.size);
  bytes[0] = 2;
  bytes.set([0x1f, 0x92], 2); // port 8082, big-endian
  bytes.set([3, 0], 4); // network 3, little-endian
  bytes.set([10, 244, 1, 10], 8);
  assert.deepEqual(decodeReport(bytes), {
    key: { family: "ipv4", address: "10.244.1.10", port: 8082 },
    networkId: 3,
  });
  assert.throws(() => decodeReport(bytes.subarray(0, 10)), RangeError);
});

Deno.test("decodeNetworkCounts() counts a network's connects as its tagged plus its unmatched", () => {
  const bytes = new Uint8Array(NETWORK_COUNTS_LAYOUT.size);
  const view = new DataView(bytes.buffer);
  view.setBigUint64(NETWORK_COUNTS_LAYOUT.fields.tagged.offset, 5n, true);
  view.setBigUint64(NETWORK_COUNTS_LAYOUT.fields.unmatched.offset, 3n, true);
  assert.deepEqual(decodeNetworkCounts(bytes), { connects: 8n, unmatched: 3n });
});

Deno.test("diffRanges() writes what is new or moved to another network and removes what is gone", () => {
  const a = hostRange("10.0.0.1", 1), b = hostRange("10.0.0.2", 1);
  const movedB = hostRange("10.0.0.2", 2), c = parseCidr("10.1.0.0/16");
  assert.deepEqual(diffRanges([a, b], [movedB, c]), { put: [movedB, c], remove: [a] });
  assert.deepEqual(diffRanges([a], [a]), { put: [], remove: [] });
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
