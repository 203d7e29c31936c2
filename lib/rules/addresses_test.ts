import assert from "node:assert/strict";
import { type AddressKind, specialAddressKind, specialAddressReason } from "./addresses.ts";

const CASES: [string, AddressKind | undefined][] = [
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["::1", "loopback"],
  ["::ffff:127.0.0.1", "loopback"],
  ["169.254.169.254", "link-local"],
  ["169.254.0.1", "link-local"],
  ["::ffff:169.254.169.254", "link-local"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf:ffff::1", "link-local"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["::", "unspecified"],
  ["::ffff:0.0.0.0", "unspecified"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["ff02::1", "multicast"],
  ["ff05::1:3", "multicast"],
  ["::ffff:224.0.0.251", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["::ffff:255.255.255.255", "broadcast"],
  // Ordinary unicast addresses, including the edges of each range above.
  ["10.244.1.10", undefined],
  ["1.0.0.0", undefined],
  ["126.255.255.255", undefined],
  ["128.0.0.0", undefined],
  ["169.253.255.255", undefined],
  ["169.255.0.0", undefined],
  ["223.255.255.255", undefined],
  ["240.0.0.1", undefined],
  ["255.255.255.254", undefined],
  ["fd00:244::10", undefined],
  ["fec0::1", undefined],
  ["::2", undefined],
  ["::ffff:10.0.0.3", undefined],
  ["2001:db8::1", undefined],
];

for (const [address, kind] of CASES) {
  Deno.test(`specialAddressKind("${address}") is ${kind ?? "ordinary unicast"}`, () => {
    assert.equal(specialAddressKind(address), kind);
  });
}

Deno.test("specialAddressKind() throws TypeError on something that is not an address", () => {
  assert.throws(
    () => specialAddressKind("metadata.google.internal"),
    new TypeError(`Invalid IP address: "metadata.google.internal"`),
  );
});

Deno.test("specialAddressReason() names the metadata service for IPv4 link-local", () => {
  assert.match(specialAddressReason("link-local", "ipv4"), /metadata service/);
  assert.match(specialAddressReason("link-local", "ipv6"), /fe80::\/10/);
});

Deno.test("specialAddressReason() says why each kind is never a pod's own address", () => {
  const cases: [AddressKind, string][] = [
    ["loopback", "a loopback address is the node itself"],
    ["unspecified", "an unspecified address reaches the node itself"],
    ["multicast", "a multicast address names a group, not a pod"],
    ["broadcast", "the broadcast address names every host on the link, not a pod"],
  ];
  for (const [kind, reason] of cases) {
    assert.equal(specialAddressReason(kind, "ipv4"), reason);
    assert.equal(specialAddressReason(kind, "ipv6"), reason);
  }
  assert.match(specialAddressReason("link-local", "ipv4"), /169\.254\.0\.0\/16/);
  assert.match(specialAddressReason("link-local", "ipv6"), /fe80::\/10/);
});
