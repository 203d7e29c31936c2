import assert from "node:assert/strict";
import { explainFailure, waitFor } from "./wait.ts";

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

Deno.test("explainFailure() adds the explained state to a failed wait and keeps it as the cause", async () => {
  const timedOut = new Error("Timed out after 20 ms waiting for the pod");
  await assert.rejects(
    explainFailure(Promise.reject(timedOut), () => Promise.resolve("pod a: Pending")),
    (e: unknown) => {
      assert(e instanceof Error);
      assert.equal(e.message, "Timed out after 20 ms waiting for the pod\npod a: Pending");
      assert.equal(e.cause, timedOut);
      return true;
    },
  );
});

Deno.test("explainFailure() keeps the failure when explaining it fails too", async () => {
  await assert.rejects(
    explainFailure(Promise.reject(new Error("no runner")), () => Promise.reject(new Error("403"))),
    /^Error: no runner\n\(could not say why: 403\)$/,
  );
});

Deno.test("explainFailure() returns the value of a wait that succeeds without explaining", async () => {
  let explained = false;
  const value = await explainFailure(Promise.resolve(7), () => {
    explained = true;
    return Promise.resolve("");
  });
  assert.equal(value, 7);
  assert.equal(explained, false);
});
