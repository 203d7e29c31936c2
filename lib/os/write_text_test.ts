import assert from "node:assert/strict";
import { writeTextSync } from "./write_text.ts";

Deno.test("writeTextSync writes the rest after a short write", () => {
  const written: number[] = [];
  // A file that takes at most 3 bytes a call, as a nearly full pipe does.
  const file = {
    writeSync(p: Uint8Array) {
      const n = Math.min(3, p.length);
      written.push(...p.subarray(0, n));
      return n;
    },
  };
  writeTextSync(file, "héllo, world");
  assert.equal(new TextDecoder().decode(new Uint8Array(written)), "héllo, world");
});
