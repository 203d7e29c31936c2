import assert from "node:assert/strict";
import { joinHostPort, splitHostPort } from "./host_port.ts";

Deno.test("splitHostPort() splits IPv4, names and bracketed IPv6 like Go's net.SplitHostPort", () => {
  assert.deepEqual(splitHostPort("10.0.0.1:1199"), ["10.0.0.1", "1199"]);
  assert.deepEqual(splitHostPort("localhost:1"), ["localhost", "1"]);
  assert.deepEqual(splitHostPort("[fd00::1]:1199"), ["fd00::1", "1199"]);
  assert.deepEqual(splitHostPort(":80"), ["", "80"]);
});

Deno.test("splitHostPort() refuses malformed addresses with Go's messages", () => {
  assert.throws(
    () => splitHostPort("10.0.0.1"),
    /^Error: address 10.0.0.1: missing port in address$/,
  );
  assert.throws(() => splitHostPort("[fd00::1]"), /missing port in address/);
  assert.throws(() => splitHostPort("[fd00::1]80"), /missing port in address/);
  assert.throws(() => splitHostPort("fd00::1:1199"), /too many colons in address/);
  assert.throws(() => splitHostPort("[fd00::1]:1:2"), /too many colons in address/);
  assert.throws(() => splitHostPort("[fd00::1:1199"), /missing ']' in address/);
});

Deno.test("joinHostPort() brackets IPv6 hosts only", () => {
  assert.equal(joinHostPort("10.0.0.1", 80), "10.0.0.1:80");
  assert.equal(joinHostPort("fd00::1", 80), "[fd00::1]:80");
});
