import assert from "node:assert/strict";
import { DirLock } from "./dir_lock.ts";

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
