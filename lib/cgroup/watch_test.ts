import assert from "node:assert/strict";
import { nearestExisting, watchDirectory } from "./watch.ts";

Deno.test("watchDirectory() calls back when a directory appears in the watched one", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "lace-watch-" });
  const { promise, resolve } = Promise.withResolvers<string>();
  const watcher = watchDirectory(dir, () => resolve("changed"));
  const timeout = setTimeout(() => resolve("timed out"), 2000);
  try {
    Deno.mkdirSync(`${dir}/kubelet.service`);
    assert.equal(await promise, "changed");
  } finally {
    clearTimeout(timeout);
    watcher.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("nearestExisting() climbs to the closest directory that exists", () => {
  const present = new Set(["/sys/fs/cgroup", "/sys/fs", "/sys"]);
  assert.equal(
    nearestExisting("/sys/fs/cgroup/system.slice/kubelet.service", (d) => present.has(d)),
    "/sys/fs/cgroup",
  );
  assert.equal(nearestExisting("/nowhere/at/all", () => false), "/");
});
