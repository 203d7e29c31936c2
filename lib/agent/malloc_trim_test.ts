import assert from "node:assert/strict";
import { libcSymbols } from "../libbpf/mod.ts";
import { trimMallocHeap } from "./malloc_trim.ts";

Deno.test("trimMallocHeap() asks glibc to trim its whole heap (no padding kept)", () => {
  const pads: bigint[] = [];
  trimMallocHeap(() => ({ malloc_trim: (pad) => (pads.push(pad), 1) }));
  assert.deepEqual(pads, [0n]);
});

Deno.test("trimMallocHeap() ignores a libc it cannot load", () => {
  assert.doesNotThrow(() =>
    trimMallocHeap(() => {
      throw new Error("no libc.so.6");
    })
  );
});

Deno.test("this process's libc has the malloc_trim that trimMallocHeap() calls", () => {
  assert.ok([0, 1].includes(libcSymbols().malloc_trim(0n)));
});
