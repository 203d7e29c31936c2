import assert from "node:assert/strict";
import { namesWithSuffixes, ownerIsGone } from "./leftovers.ts";

Deno.test("namesWithSuffixes() picks lace-<kind>-<suffix> names of the given suffixes only", () => {
  const names = [
    "lace-node-ab12",
    "lace-pod1-ab12",
    "lace-sim-cd34",
    "lace-test-ab12x",
    "other-node-ab12",
    "lace-ab12",
    "lace-node-ab12-extra",
  ];
  assert.deepEqual(namesWithSuffixes(names, new Set(["ab12"])), [
    "lace-node-ab12",
    "lace-pod1-ab12",
  ]);
  assert.deepEqual(namesWithSuffixes(names, new Set()), []);
});

Deno.test("ownerIsGone() is false for this process and true for a reused or dead pid", () => {
  const [start] = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ").slice(19);
  assert.equal(ownerIsGone(`${Deno.pid}-${start}`), false);
  assert.equal(ownerIsGone(`${Deno.pid}-${Number(start) + 1}`), true, "same pid, other start");
  assert.equal(ownerIsGone("0-1"), true);
  assert.equal(ownerIsGone("garbage"), true);
});
