import assert from "node:assert/strict";
import { waitFor } from "./wait.ts";

Deno.test("waitFor() returns the first truthy value of the condition", async () => {
  let calls = 0;
  const value = await waitFor(() => ++calls >= 3 && `after ${calls}`, { interval: 1 });
  assert.equal(value, "after 3");
});

Deno.test("waitFor() keeps checking a condition that throws until it holds", async () => {
  let calls = 0;
  const value = await waitFor(() => {
    if (++calls < 3) throw new Error("not yet");
    return calls;
  }, { interval: 1 });
  assert.equal(value, 3);
});

Deno.test("waitFor() fails at the deadline naming what it waited for and the last error", async () => {
  const last = new Error("connection refused");
  await assert.rejects(
    waitFor(() => {
      throw last;
    }, { timeout: 20, interval: 5, message: "the server" }),
    (e: unknown) => {
      assert(e instanceof Error);
      assert.equal(e.message, "Timed out after 20 ms waiting for the server: connection refused");
      assert.equal(e.cause, last);
      return true;
    },
  );
});

Deno.test("waitFor() fails at the deadline when the condition never holds", async () => {
  await assert.rejects(
    waitFor(() => false, { timeout: 20, interval: 5, message: "nothing" }),
    /^Error: Timed out after 20 ms waiting for nothing$/,
  );
});

Deno.test("waitFor() names only the last check's error, not one from an earlier check", async () => {
  let calls = 0;
  await assert.rejects(
    waitFor(() => {
      if (++calls === 1) throw new Error("connection refused");
      return false;
    }, { timeout: 20, interval: 5, message: "the server" }),
    /^Error: Timed out after 20 ms waiting for the server$/,
  );
});
