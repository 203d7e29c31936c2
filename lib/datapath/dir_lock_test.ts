import assert from "node:assert/strict";
import { DirLock, flockOnce, lockHolders } from "./dir_lock.ts";
import { closeFd, Errno, lastErrno, LOCK_EX, LOCK_NB, openDirectory } from "../libbpf/mod.ts";

function withDir(fn: (dir: string) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "lace-dir-lock-" });
  try {
    fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("an exclusive lock on a directory keeps a second one out until it is released", () => {
  withDir((dir) => {
    const first = DirLock.tryTake(dir, "exclusive");
    assert.ok(first);
    assert.equal(DirLock.tryTake(dir, "exclusive", 20), undefined);
    first.close();
    using again = DirLock.tryTake(dir, "exclusive");
    assert.ok(again);
  });
});

Deno.test("shared locks coexist, and isHeld() sees them until the last is released", () => {
  withDir((dir) => {
    assert.equal(DirLock.isHeld(dir), false);
    const a = DirLock.tryTake(dir, "shared");
    const b = DirLock.tryTake(dir, "shared");
    assert.ok(a && b);
    assert.equal(DirLock.isHeld(dir), true);
    a.close();
    assert.equal(DirLock.isHeld(dir), true);
    b.close();
    assert.equal(DirLock.isHeld(dir), false);
  });
});

Deno.test("lockHolders() calls a lock no agent's only when every opener is another user", () => {
  const nobody = { pid: 9, uid: 65534, comm: "sleep" };
  assert.equal(lockHolders([]), "unseen");
  assert.equal(lockHolders([nobody]), "strangers");
  assert.equal(lockHolders([nobody, { pid: 7, uid: 0, comm: "lace" }]), "maybe-agent");
  assert.equal(lockHolders([nobody, { pid: 8, uid: null, comm: null }]), "maybe-agent");
});

Deno.test("openers() finds another process that has the directory open, and no other", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "lace-dir-lock-" });
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec 9<"$1"; echo open; exec sleep 60', "sh", dir],
    stdout: "piped",
  }).spawn();
  try {
    const reader = child.stdout.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value).trim(), "open");
    reader.releaseLock();
    const openers = DirLock.openers(dir);
    assert.deepEqual(openers.map((o) => [o.pid, o.comm]), [[child.pid, "sleep"]]);
    assert.deepEqual(DirLock.openers(Deno.cwd()).filter((o) => o.pid === child.pid), []);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("flockOnce() still calls a held lock held when errno was clobbered once after the flock", () => {
  withDir((dir) => {
    using held = DirLock.tryTake(dir, "exclusive");
    assert.ok(held);
    const fd = openDirectory(dir);
    try {
      // The first errno read is what V8 may leave (ENOENT); the second is the flock's own.
      let reads = 0;
      const errnoOf = () => reads++ === 0 ? Errno.ENOENT : lastErrno();
      assert.equal(flockOnce(fd, LOCK_EX | LOCK_NB, dir, errnoOf), false);
      assert.equal(reads, 2);
    } finally {
      closeFd(fd);
    }
  });
});
