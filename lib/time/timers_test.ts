import assert from "node:assert/strict";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { runInSlices, sleep, TimeSlice, within, yieldToEventLoop } from "./timers.ts";

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

Deno.test("TimeSlice is spent once its time has passed since it was made or started again", () => {
  let t = 10;
  const slice = new TimeSlice(2, () => t);
  t = 11.9;
  assert.equal(slice.spent(), false);
  t = 12;
  assert.equal(slice.spent(), true);
  slice.start();
  assert.equal(slice.spent(), false);
  t = 14;
  assert.equal(slice.spent(), true);
});

Deno.test("runInSlices() pauses between steps each time a slice is spent, and gives the result", async () => {
  // A clock that advances 1 ms per step: with 3 ms slices, a pause after every third step.
  let t = 0;
  const log: string[] = [];
  function* steps(): Generator<void, string, void> {
    for (let i = 1; i <= 7; i++) {
      t++;
      log.push(`step ${i}`);
      yield;
    }
    return "done";
  }
  const result = await runInSlices(steps(), new TimeSlice(3, () => t), () => {
    log.push("pause");
    return Promise.resolve();
  });
  assert.equal(result, "done");
  assert.deepEqual(log, [
    "step 1",
    "step 2",
    "step 3",
    "pause",
    "step 4",
    "step 5",
    "step 6",
    "pause",
    "step 7",
  ]);
});

Deno.test("yieldToEventLoop() lets a timer set before it run first", async () => {
  const { clock, timers } = fakeTime();
  const order: string[] = [];
  timers.setTimeout(() => order.push("timer"), 0);
  const yielded = yieldToEventLoop(timers).then(() => order.push("after the yield"));
  await clock.tickAsync(0);
  await yielded;
  assert.deepEqual(order, ["timer", "after the yield"]);
});
