import assert from "node:assert/strict";
import { hostAddressSet, readHostAddresses } from "./addresses.ts";

Deno.test("hostAddressSet() keeps the node's unicast addresses canonical and leaves out loopback, link-local and unreadable ones", () => {
  const set = hostAddressSet([
    { address: "10.99.1.1" },
    { address: "FD99:0::1" },
    { address: "127.0.0.1" },
    { address: "::1" },
    { address: "fe80::1%eth0" },
    { address: "169.254.1.1" },
    { address: "not an address" },
  ]);
  assert.deepEqual([...set].sort(), ["10.99.1.1", "fd99::1"]);
});

Deno.test("readHostAddresses() reads this namespace's interfaces without loopback", () => {
  const set = readHostAddresses();
  assert.ok(!set.has("127.0.0.1") && !set.has("::1"));
});
