import assert from "node:assert/strict";
import {
  decodeNetworkCounts,
  decodeRange,
  decodeReport,
  diffRanges,
  encodeRangeKey,
  encodeRangeValue,
  NETWORK_COUNTS_LAYOUT,
  REPORT_LAYOUT,
} from "./pod_ranges.ts";
import { hostRange, parseCidr } from "../net/cidr.ts";

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
  assert.throws(
    () => decodeReport(bytes.subarray(0, 10)),
    new RangeError("Report must be 24 bytes, got 10"),
  );
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
