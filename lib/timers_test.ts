import assert from "node:assert/strict";
import { fakeTime } from "../tests/helpers/fake_time.ts";
import { sleep } from "./timers.ts";

Deno.test("sleep() resolves once its time has passed on the given timers", async () => {
  const { clock, timers } = fakeTime();
  let done = false;
  const slept = sleep(timers, 100).then(() => done = true);
  await clock.tickAsync(99);
  assert.equal(done, false);
  await clock.tickAsync(1);
  await slept;
  assert.equal(done, true);
});

Deno.test("sleep() resolves at once when its signal aborts and leaves no timer", async () => {
  const { clock, timers } = fakeTime();
  const abort = new AbortController();
  const slept = sleep(timers, 60_000, abort.signal);
  abort.abort();
  await slept;
  assert.equal(clock.countTimers(), 0);
});
