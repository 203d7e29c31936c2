import assert from "node:assert/strict";
import { type DaemonSetObject, OwnDaemonSet, type OwnDaemonSetOptions } from "./own_daemonset.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";

const ds = (uid: string, rv: string, deleting = false): DaemonSetObject => ({
  metadata: {
    uid,
    resourceVersion: rv,
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
});

function apiError(code: number) {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code });
}

/** An OwnDaemonSet on a fake API: `listed` is the list's answer, `get` the final GET's. */
function fake(
  listed: DaemonSetObject[],
  get: OwnDaemonSetOptions["get"] = () => Promise.reject(apiError(403)),
) {
  const { clock, timers } = fakeTime();
  const watches: { path: string; query: Record<string, unknown> }[] = [];
  const lists: string[] = [];
  let callback: ((phase: string, object: unknown) => void) | undefined;
  let done: ((error: unknown) => void) | undefined;
  const own = new OwnDaemonSet({
    namespace: "lace-system",
    name: "lace",
    list: (fieldSelector) => {
      lists.push(fieldSelector);
      return Promise.resolve({ metadata: { resourceVersion: "100" }, items: listed });
    },
    watch: (path, query, cb, d) => {
      watches.push({ path, query });
      callback = cb;
      done = d;
      return Promise.resolve(new AbortController());
    },
    get: () => get(),
    timers,
    retryMs: 1000,
  });
  return {
    own,
    clock,
    watches,
    lists,
    send: (phase: string, object: unknown) => callback!(phase, object),
    end: () => done!(null),
  };
}

/** Lets the list and the watch's open settle. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

Deno.test("OwnDaemonSet lists its one DaemonSet by name, then watches it from the list's resourceVersion", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  assert.deepEqual(f.lists, ["metadata.name=lace"]);
  assert.deepEqual(f.watches, [{
    path: "/apis/apps/v1/namespaces/lace-system/daemonsets",
    query: {
      fieldSelector: "metadata.name=lace",
      resourceVersion: "100",
      allowWatchBookmarks: true,
    },
  }]);
  assert.equal(f.own.uid, "u1");
  assert.equal(f.own.deleting, false);
  f.own.stop();
});

Deno.test("OwnDaemonSet says uninstalling once the watch saw the deletion, even when a GET is refused after", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  assert.equal(await f.own.uninstalling(), false, "a refused GET alone is no uninstall");
  f.send("DELETED", ds("u1", "101"));
  assert.equal(await f.own.uninstalling(), true);
  f.own.stop();
});

Deno.test("OwnDaemonSet counts a deletion timestamp as being deleted", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  f.send("MODIFIED", ds("u1", "101", true));
  assert.equal(f.own.deleting, true);
  assert.equal(await f.own.uninstalling(), true);
  f.own.stop();
});

Deno.test("OwnDaemonSet: a DaemonSet of the same name created after the deletion cancels it (orphan delete, replace --force)", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  // kubectl delete --cascade=orphan: marked, then gone; then created again with a new uid.
  f.send("MODIFIED", ds("u1", "101", true));
  f.send("DELETED", ds("u1", "102", true));
  assert.equal(f.own.deleting, true);
  f.send("ADDED", ds("u2", "103"));
  assert.equal(f.own.deleting, false);
  assert.equal(f.own.uid, "u2");
  assert.equal(await f.own.uninstalling(), false, "the GET is refused; the watch's last word");
  // The new one's own deletion counts again.
  f.send("DELETED", ds("u2", "104"));
  assert.equal(await f.own.uninstalling(), true);
  f.own.stop();
});

Deno.test("OwnDaemonSet: the new DaemonSet stands even when the watch missed the old one's removal", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  f.send("MODIFIED", ds("u1", "101", true));
  f.send("ADDED", ds("u2", "103"));
  assert.equal(await f.own.uninstalling(), false);
  f.own.stop();
});

Deno.test("OwnDaemonSet: the deletion of a uid it no longer follows changes nothing", async () => {
  const f = fake([ds("u2", "90")]);
  f.own.start();
  await settle();
  f.send("DELETED", ds("u1", "101"));
  assert.equal(f.own.deleting, false);
  assert.equal(f.own.uid, "u2");
  f.own.stop();
});

Deno.test("OwnDaemonSet.uninstalling() asks the API at the end: 404 means gone, one standing means not, whichever uid", async () => {
  const gone = fake([ds("u1", "90")], () => Promise.reject(apiError(404)));
  gone.own.start();
  await settle();
  assert.equal(await gone.own.uninstalling(), true);
  gone.own.stop();
  // The watch saw the deletion, but a DaemonSet of the name stands again at the end.
  const again = fake([ds("u1", "90")], () => Promise.resolve(ds("u2", "110")));
  again.own.start();
  await settle();
  again.send("DELETED", ds("u1", "101"));
  assert.equal(await again.own.uninstalling(), false);
  assert.equal(again.own.uid, "u2");
  again.own.stop();
  const marked = fake([], () => Promise.resolve(ds("u1", "110", true)));
  assert.equal(await marked.own.uninstalling(), true);
  const unknown = fake([]);
  assert.equal(await unknown.own.uninstalling(), false, "no answer at all: the chain stays");
});

Deno.test("OwnDaemonSet takes an empty list as gone", async () => {
  const f = fake([]);
  f.own.start();
  await settle();
  assert.equal(f.own.deleting, true);
  f.send("ADDED", ds("u3", "101"));
  assert.equal(f.own.deleting, false);
  f.own.stop();
});

Deno.test("OwnDaemonSet resumes an ended watch from the last resourceVersion, and lists again after 410 Gone", async () => {
  const f = fake([ds("u1", "90")]);
  f.own.start();
  await settle();
  f.send("BOOKMARK", { metadata: { resourceVersion: "150" } });
  f.end();
  await f.clock.tickAsync(1000);
  await settle();
  assert.equal(f.lists.length, 1);
  assert.equal(f.watches[1].query.resourceVersion, "150");
  f.send("ERROR", { kind: "Status", code: 410, message: "too old resource version" });
  f.end();
  await f.clock.tickAsync(1000);
  await settle();
  assert.equal(f.lists.length, 2);
  assert.equal(f.watches[2].query.resourceVersion, "100");
  f.own.stop();
});

Deno.test("OwnDaemonSet.uninstalling() stops waiting for a GET that never answers after 5 s and takes the watch's last word", async () => {
  const f = fake([ds("u1", "90")], () => new Promise(() => {}));
  f.own.start();
  await settle();
  f.send("DELETED", ds("u1", "101"));
  let answer: boolean | undefined;
  const asked = f.own.uninstalling().then((a) => answer = a);
  await f.clock.tickAsync(4999);
  assert.equal(answer, undefined, "still waiting for the GET");
  await f.clock.tickAsync(1);
  await asked;
  assert.equal(answer, true);
  f.own.stop();
});
