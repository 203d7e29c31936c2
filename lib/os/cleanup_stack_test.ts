import assert from "node:assert/strict";
import { CleanupStack } from "./cleanup_stack.ts";

Deno.test("CleanupStack runs every step newest first, also after a step fails", async () => {
  const ran: string[] = [];
  const stack = new CleanupStack("world");
  stack.push(() => ran.push("first"));
  stack.push(() => {
    throw new Error("second broke");
  });
  stack.push(async () => {
    await Promise.resolve();
    ran.push("third");
  });
  await assert.rejects(stack.run(), (e: unknown) => {
    assert(e instanceof AggregateError);
    assert.equal(e.message, "world cleanup failed");
    assert.deepEqual(e.errors.map((x: Error) => x.message), ["second broke"]);
    return true;
  });
  assert.deepEqual(ran, ["third", "first"]);
});

Deno.test("CleanupStack forgets the steps it ran, so a second run does nothing", async () => {
  let runs = 0;
  const stack = new CleanupStack("world");
  stack.push(() => runs++);
  assert.deepEqual(await stack.runAll(), []);
  assert.deepEqual(await stack.runAll(), []);
  assert.equal(runs, 1);
});
