import assert from "node:assert/strict";
import {
  decideTakeover,
  isPresenceDir,
  layoutDirName,
  layoutMismatch,
  parseLayoutDir,
  presenceDirName,
  probeMapCodecFits,
  type Running,
} from "./layout.ts";

const self = { abi: 2, startedAt: 1000 };
const other = (r: Partial<Running>): Running => ({
  abi: 1,
  sameMaps: false,
  startedAt: 500,
  live: false,
  ...r,
});

Deno.test("a layout directory name round-trips, and nothing else parses as one", () => {
  assert.equal(parseLayoutDir(layoutDirName(7)), 7);
  for (const name of ["abi0", "abi", "abi01", "abi7x", "link_connect4", "probe_targets"]) {
    assert.equal(parseLayoutDir(name), undefined, name);
  }
});

Deno.test("layoutMismatch() names every field that differs, and nothing when all match", () => {
  const want = { type: 1, keySize: 20, valueSize: 8, maxEntries: 65536 };
  assert.equal(layoutMismatch("probe_targets", want, { ...want }), undefined);
  assert.equal(
    layoutMismatch("probe_targets", want, { ...want, valueSize: 12, maxEntries: 4 }),
    'pinned map "probe_targets" has valueSize 12, maxEntries 4, ' +
      "this object's has valueSize 8, maxEntries 65536",
  );
});

Deno.test("the codec fits a hash map with today's key and a value at least today's size", () => {
  const today = { type: 1, keySize: 20, valueSize: 8, maxEntries: 10 };
  assert.equal(probeMapCodecFits(today), true);
  assert.equal(probeMapCodecFits({ ...today, valueSize: 12 }), true);
  assert.equal(probeMapCodecFits({ ...today, valueSize: 4 }), false);
  assert.equal(probeMapCodecFits({ ...today, keySize: 24 }), false);
  assert.equal(probeMapCodecFits({ ...today, type: 2 }), false);
});

Deno.test("an agent swaps in over an older layout, live or not (upgrade)", () => {
  assert.deepEqual(decideTakeover(self, other({ abi: 1, live: true })), { swap: true });
});

Deno.test("an agent swaps in over a newer layout whose agent is gone (rollback)", () => {
  assert.deepEqual(decideTakeover(self, other({ abi: 3, live: false })), { swap: true });
});

Deno.test("an agent stands by while a live agent runs a newer layout", () => {
  const d = decideTakeover(self, other({ abi: 3, live: true }));
  assert.equal(d.swap, false);
  assert.match(!d.swap ? d.reason : "", /live agent of the newer map layout ABI 3/);
});

Deno.test("on the same maps, the agent that started later keeps the links", () => {
  assert.deepEqual(decideTakeover(self, other({ sameMaps: true, startedAt: 500 })), {
    swap: true,
  });
  const d = decideTakeover(self, other({ sameMaps: true, startedAt: 2000, live: true }));
  assert.equal(d.swap, false);
  assert.match(!d.swap ? d.reason : "", /same map layout \(ABI 2\) that started later/);
});

Deno.test("on the same maps, a later agent that is gone leaves the links to this one", () => {
  assert.deepEqual(
    decideTakeover(self, other({ sameMaps: true, startedAt: 2000, live: false })),
    { swap: true },
  );
});

Deno.test("presence directory names are told apart from every other pin name", () => {
  assert.equal(isPresenceDir(presenceDirName(1764575000123)), true);
  for (const name of ["agent_", "agent_x", "abi2", "link_connect4", "agent_1/x"]) {
    assert.equal(isPresenceDir(name), false, name);
  }
});
