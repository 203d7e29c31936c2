import assert from "node:assert/strict";
import { HostAddressWatch } from "./address_watch.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";

function world(read: () => ReadonlySet<string>) {
  const { clock, timers } = fakeTime();
  const state = { held: undefined as ReadonlySet<string> | undefined, reads: 0 };
  const changed: string[][] = [];
  const watch = new HostAddressWatch({
    read: () => {
      state.reads++;
      return read();
    },
    held: () => state.held,
    changed: (set) => changed.push([...set].sort()),
    timers,
    intervalMs: 1000,
  });
  return { clock, state, changed, watch };
}

Deno.test("HostAddressWatch reports a set that differs from the one held, every interval until stopped", () => {
  let now = new Set(["10.0.0.1"]);
  const w = world(() => now);
  w.watch.start();
  w.clock.tick(1000);
  assert.equal(w.state.reads, 0, "nothing held before the first reconcile: not read");
  w.state.held = new Set(["10.0.0.1"]);
  w.clock.tick(1000);
  assert.deepEqual(w.changed, []);
  now = new Set(["10.0.0.1", "10.0.0.8"]);
  w.clock.tick(999);
  assert.deepEqual(w.changed, []);
  w.clock.tick(1);
  assert.deepEqual(w.changed, [["10.0.0.1", "10.0.0.8"]]);
  // A lost address counts too.
  w.state.held = new Set(["10.0.0.1", "10.0.0.8", "fd00::1"]);
  w.clock.tick(1000);
  assert.deepEqual(w.changed.length, 2);
  w.watch.stop();
  const reads = w.state.reads;
  w.clock.tick(10_000);
  assert.equal(w.state.reads, reads);
});

Deno.test("HostAddressWatch keeps checking after a read throws", () => {
  let fail = true;
  const w = world(() => {
    if (fail) throw new Error("boom");
    return new Set(["10.0.0.8"]);
  });
  w.state.held = new Set();
  w.watch.start();
  w.clock.tick(1000);
  fail = false;
  w.clock.tick(1000);
  assert.deepEqual(w.changed, [["10.0.0.8"]]);
  w.watch.stop();
});
