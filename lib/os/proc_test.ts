import assert from "node:assert/strict";
import { parseStatusUid, procDir, processComm, processUid } from "./proc.ts";

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

Deno.test("procDir() reads at most maxBytes of a file, and null for a process that is gone", () => {
  const root = Deno.makeTempDirSync({ prefix: "lace-proc-" });
  try {
    Deno.mkdirSync(`${root}/42`);
    Deno.writeTextFileSync(`${root}/42/cmdline`, "kubelet\0" + "x".repeat(1024 * 1024));
    Deno.mkdirSync(`${root}/self`);
    const proc = procDir(root);
    assert.deepEqual(proc.pids(), [42]);
    assert.equal(proc.read(42, "cmdline", 100), "kubelet\0" + "x".repeat(92));
    assert.equal(proc.read(42, "cmdline", 64 * 1024)?.length, 64 * 1024);
    assert.equal(proc.read(43, "cmdline", 100), null);
    assert.equal(proc.readLink(42, "ns/mnt"), null);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
