import assert from "node:assert/strict";
import { isErrno } from "./errors.ts";
import { closeFd, openDirectory } from "./fd.ts";

Deno.test("openDirectory() opens a directory and returns its file descriptor", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const fd = openDirectory(dir);
    assert(fd >= 0);
    assert.equal(Deno.readLinkSync(`/proc/self/fd/${fd}`), dir);
    closeFd(fd);
  } finally {
    Deno.removeSync(dir);
  }
});

Deno.test("openDirectory() on a regular file reports ENOTDIR, not ENOENT", () => {
  const file = Deno.makeTempFileSync();
  try {
    assert.throws(() => openDirectory(file), (e: unknown) => {
      assert(isErrno(e, "ENOTDIR"), String(e));
      assert.match((e as Error).message, /^open directory ".*" failed: ENOTDIR/);
      return true;
    });
  } finally {
    Deno.removeSync(file);
  }
});

Deno.test("openDirectory() on a missing path reports ENOENT", () => {
  assert.throws(() => openDirectory("/nonexistent/lace"), (e: unknown) => isErrno(e, "ENOENT"));
});
