import assert from "node:assert/strict";
import { parseFibTrieLocal, parseIfInet6 } from "./proc_net_addresses.ts";

/**
 * Captured from a namespace with lo, d0 (10.99.1.1/24, secondary 10.99.1.7/24, fd99::1/64,
 * fd99::7/64) and d1 (192.168.77.5/16, fd77::5/64), veth peers d0p and d1p without addresses.
 */
const FIB_TRIE = `
Main:
  +-- 0.0.0.0/0 3 0 5
     +-- 10.99.1.0/24 2 0 2
        +-- 10.99.1.0/29 2 1 2
           +-- 10.99.1.0/31 1 0 0
              |-- 10.99.1.0
                 /24 link UNICAST
              |-- 10.99.1.1
                 /32 host LOCAL
           |-- 10.99.1.7
              /32 host LOCAL
        |-- 10.99.1.255
           /32 link BROADCAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.168.0.0/16 2 0 1
        |-- 192.168.0.0
           /16 link UNICAST
        |-- 192.168.77.5
           /32 host LOCAL
        |-- 192.168.255.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 10.99.1.0/24 2 0 2
        +-- 10.99.1.0/29 2 1 2
           +-- 10.99.1.0/31 1 0 0
              |-- 10.99.1.0
                 /24 link UNICAST
              |-- 10.99.1.1
                 /32 host LOCAL
           |-- 10.99.1.7
              /32 host LOCAL
        |-- 10.99.1.255
           /32 link BROADCAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.168.0.0/16 2 0 1
        |-- 192.168.0.0
           /16 link UNICAST
        |-- 192.168.77.5
           /32 host LOCAL
        |-- 192.168.255.255
           /32 link BROADCAST
`;

const IF_INET6 = `
fe800000000000007c2076fffe7aa9e7 02 40 20 c0      d0p
00000000000000000000000000000001 01 80 10 80       lo
fe80000000000000089d54fffe5470e6 03 40 20 c0       d0
fe80000000000000b4409bfffe1d43d7 04 40 20 c0      d1p
fe80000000000000940d34fffea05cc8 05 40 20 c0       d1
fd990000000000000000000000000007 03 40 00 82       d0
fd990000000000000000000000000001 03 40 00 82       d0
fd770000000000000000000000000005 05 40 00 82       d1
`;

Deno.test("parseFibTrieLocal() lists every /32 host LOCAL address once: primary, secondary, several interfaces, loopback", () => {
  assert.deepEqual(
    parseFibTrieLocal(FIB_TRIE).sort(),
    ["10.99.1.1", "10.99.1.7", "127.0.0.1", "192.168.77.5"],
  );
});

Deno.test("parseFibTrieLocal() reads the tables of policy routing (Id <n>:) too", () => {
  const text = "Id 101:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.99.2.1\n        /32 host LOCAL\n" +
    "        /24 link UNICAST\n" + FIB_TRIE;
  assert.ok(parseFibTrieLocal(text).includes("10.99.2.1"));
});

Deno.test("parseFibTrieLocal() leaves out networks, broadcasts and 127.0.0.0/8 itself", () => {
  const got = parseFibTrieLocal(FIB_TRIE);
  for (const a of ["10.99.1.0", "10.99.1.255", "127.0.0.0", "192.168.0.0", "192.168.255.255"]) {
    assert.ok(!got.includes(a), a);
  }
});

Deno.test("parseFibTrieLocal() refuses text that is not fib_trie with the line it could not read", () => {
  assert.throws(
    () => parseFibTrieLocal(IF_INET6),
    /fib_trie line 2 .*\/proc\/<pid>\/net\/fib_trie/,
  );
  assert.throws(() => parseFibTrieLocal("Main:\n  /32 host LOCAL\n"), /line 2.*before any leaf/);
  assert.throws(() => parseFibTrieLocal("Main:\n  |-- 10.0.0.300\n"), /line 2/);
  assert.deepEqual(parseFibTrieLocal(""), []);
});

Deno.test("parseIfInet6() lists every address in canonical form: several interfaces, secondary, loopback, link-local", () => {
  assert.deepEqual(
    parseIfInet6(IF_INET6).sort(),
    [
      "::1",
      "fd77::5",
      "fd99::1",
      "fd99::7",
      "fe80::7c20:76ff:fe7a:a9e7",
      "fe80::89d:54ff:fe54:70e6",
      "fe80::940d:34ff:fea0:5cc8",
      "fe80::b440:9bff:fe1d:43d7",
    ].sort(),
  );
  assert.deepEqual(
    parseIfInet6("20010db8000000010000000000000001 02 40 00 00 eth0\n"),
    ["2001:db8:0:1::1"],
  );
});

Deno.test("parseIfInet6() refuses a line of another shape with its number", () => {
  assert.throws(() => parseIfInet6(FIB_TRIE), /if_inet6 line 2 .*32 hex digits/);
  assert.throws(() => parseIfInet6("fd99::1 02 40 00 00 eth0"), /line 1/);
});
