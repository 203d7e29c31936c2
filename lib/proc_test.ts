import assert from "node:assert/strict";
import { parseStatusUid, processComm, processUid } from "./proc.ts";

Deno.test("parseStatusUid() is 0 only when the real and effective uids are both 0", () => {
  assert.equal(parseStatusUid("Name:\tk\nUid:\t0\t0\t0\t0\n"), 0);
  assert.equal(parseStatusUid("Uid:\t1000\t0\t0\t0\n"), 1000);
  assert.equal(parseStatusUid("Uid:\t0\t65534\t0\t0\n"), 65534);
  assert.equal(parseStatusUid("Name:\tk\n"), null);
});

Deno.test("processUid() and processComm() read this process, and are null for a gone one", () => {
  assert.equal(processUid(Deno.pid), Deno.uid());
  assert.ok(processComm(Deno.pid));
  assert.equal(processUid(0), null);
  assert.equal(processComm(0), null);
});
