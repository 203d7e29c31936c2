import assert from "node:assert/strict";
import { closeSync, openSync } from "node:fs";
import { readUpTo } from "./read_fd.ts";

Deno.test("readUpTo() reads a file to its end, and stops at the limit of a longer one", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(path, "0123456789");
    for (const [limit, want] of [[11, "0123456789"], [10, "0123456789"], [4, "0123"], [0, ""]]) {
      const fd = openSync(path, "r");
      try {
        assert.equal(new TextDecoder().decode(readUpTo(fd, limit as number)), want);
      } finally {
        closeSync(fd);
      }
    }
  } finally {
    await Deno.remove(path);
  }
});
