import assert from "node:assert/strict";
import { OwnDaemonSet, type OwnDaemonSetOptions } from "./own_daemonset.ts";

function fake(get: OwnDaemonSetOptions["get"]) {
  const calls: { path: string; query: Record<string, unknown> }[] = [];
  let callback: ((phase: string, object: unknown) => void) | undefined;
  const ds = new OwnDaemonSet({
    namespace: "lace-system",
    name: "lace",
    watch: (path, query, cb) => {
      calls.push({ path, query });
      callback = cb;
      return Promise.resolve(new AbortController());
    },
    get,
  });
  return { ds, calls, send: (phase: string, object: unknown) => callback!(phase, object) };
}

const alive = () => Promise.resolve({ metadata: {} });

Deno.test("OwnDaemonSet watches its one DaemonSet by name", async () => {
  const f = fake(alive);
  f.ds.start();
  await Promise.resolve();
  assert.deepEqual(f.calls, [{
    path: "/apis/apps/v1/namespaces/lace-system/daemonsets",
    query: { fieldSelector: "metadata.name=lace" },
  }]);
  f.ds.stop();
});

Deno.test("OwnDaemonSet says uninstalling once the watch saw the deletion, even when a GET is refused after", async () => {
  const f = fake(() => Promise.reject(Object.assign(new Error("forbidden"), { code: 403 })));
  f.ds.start();
  await Promise.resolve();
  f.send("ADDED", { metadata: {} });
  assert.equal(await f.ds.uninstalling(), false, "a refused GET alone is no uninstall");
  f.send("DELETED", { metadata: {} });
  assert.equal(await f.ds.uninstalling(), true);
  f.ds.stop();
});

Deno.test("OwnDaemonSet counts a deletion timestamp as being deleted", async () => {
  const f = fake(alive);
  f.ds.start();
  await Promise.resolve();
  f.send("MODIFIED", { metadata: { deletionTimestamp: "2026-12-02T02:00:00Z" } });
  assert.equal(f.ds.deleting, true);
  f.ds.stop();
});

Deno.test("OwnDaemonSet.uninstalling() asks the API at the end: 404 means gone, a live one means not", async () => {
  const gone = fake(() => Promise.reject(Object.assign(new Error("not found"), { code: 404 })));
  assert.equal(await gone.ds.uninstalling(), true);
  assert.equal(await fake(alive).ds.uninstalling(), false);
  const marked = fake(() => Promise.resolve({ metadata: { deletionTimestamp: "x" } }));
  assert.equal(await marked.ds.uninstalling(), true);
});
