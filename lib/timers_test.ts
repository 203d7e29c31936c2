import assert from "node:assert/strict";
import { fakeTime } from "../tests/helpers/fake_time.ts";
import { sleep, within } from "./timers.ts";

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

Deno.test("within() gives the promise's answer when it comes in time, and leaves no timer", async () => {
  const { clock, timers } = fakeTime();
  const answer = within(timers, Promise.resolve(7), 1_000, "the thing");
  assert.equal(await answer, 7);
  assert.equal(clock.countTimers(), 0);
  await assert.rejects(
    within(timers, Promise.reject(new Error("refused")), 1_000, "the thing"),
    /refused/,
  );
});

Deno.test("within() rejects, naming what got no answer, once its time has passed", async () => {
  const { clock, timers } = fakeTime();
  const never = within(timers, new Promise(() => {}), 1_000, "the pod list");
  const outcome = never.then(() => "answered", (e: Error) => e.message);
  await clock.tickAsync(999);
  assert.equal(clock.countTimers(), 1);
  await clock.tickAsync(1);
  assert.equal(await outcome, "the pod list got no answer in 1000 ms");
});
