import assert from "node:assert/strict";
import { HeapGate } from "./heap_gate.ts";

Deno.test("HeapGate collects once the heap grew by a step since its last collection", () => {
  let heap = 100;
  let collections = 0;
  const gate = new HeapGate({
    stepBytes: 50,
    heapUsed: () => heap,
    gc: () => {
      collections++;
      heap = 110;
    },
  });
  heap = 149;
  assert.equal(gate.check(), false);
  heap = 150;
  assert.equal(gate.check(), true);
  assert.equal(collections, 1);
  // The step counts from what the collection left (110), not from the start.
  heap = 159;
  assert.equal(gate.check(), false);
  heap = 160;
  assert.equal(gate.check(), true);
  assert.equal(collections, 2);
});

Deno.test("HeapGate does nothing without gc()", () => {
  const gate = new HeapGate({
    stepBytes: 1,
    heapUsed: () => {
      throw new Error("never read without gc()");
    },
    gc: undefined,
  });
  // The default gc is V8's when exposed: this test runs without --expose-gc.
  if ((globalThis as { gc?: unknown }).gc === undefined) assert.equal(gate.check(), false);
});
