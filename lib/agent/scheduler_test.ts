import assert from "node:assert/strict";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { Scheduler } from "./scheduler.ts";

/** A scheduler whose runs are recorded with their start times; `outcome` decides failure. */
function setup(opts: { outcome?: () => boolean | Promise<boolean> } = {}) {
  const { clock, timers } = fakeTime();
  const runs: { reason: string; at: number }[] = [];
  const scheduler = new Scheduler<boolean>({
    run: async (reason) => {
      runs.push({ reason, at: clock.now });
      return await (opts.outcome?.() ?? true);
    },
    failed: (ok) => !ok,
    minIntervalMs: 10,
    maxIntervalMs: 60_000,
    backoff: { initialMs: 100, maxMs: 1000 },
    timers,
  });
  const settle = async (ms: number) => {
    await clock.tickAsync(ms);
    await scheduler.idle();
  };
  return { clock, runs, scheduler, settle };
}

Deno.test("Scheduler gathers a burst of requests into one run after the minimum interval", async () => {
  const t = setup();
  t.scheduler.start();
  for (let i = 0; i < 50; i++) t.scheduler.trigger(i % 2 ? "pod" : "file");
  await t.settle(9);
  assert.equal(t.runs.length, 0);
  await t.settle(1);
  assert.deepEqual(t.runs, [{ reason: "start,file,pod", at: 10 }]);
  await t.scheduler.stop();
});

Deno.test("Scheduler runs a request after a quiet minimum interval at once and gathers those within the next", async () => {
  const t = setup();
  t.scheduler.start();
  await t.settle(10);
  await t.settle(100);
  // Two requests in one task (a source's list) are one run, started without waiting.
  t.scheduler.trigger("a");
  t.scheduler.trigger("b");
  await t.settle(0);
  await t.settle(4);
  t.scheduler.trigger("c");
  await t.settle(3);
  t.scheduler.trigger("d");
  await t.settle(2);
  assert.equal(t.runs.length, 2, "c and d wait for the interval's end");
  await t.settle(1);
  assert.deepEqual(t.runs.map((r) => `${r.reason}@${r.at}`), ["start@10", "a,b@110", "c,d@120"]);
  await t.scheduler.stop();
});

Deno.test("Scheduler starts requested runs at least the minimum interval apart", async () => {
  const t = setup();
  t.scheduler.start();
  await t.settle(10);
  for (let i = 0; i < 20; i++) {
    t.scheduler.trigger("pod");
    await t.settle(3);
  }
  await t.settle(10);
  const starts = t.runs.map((r) => r.at);
  assert.ok(starts.length > 2, `several runs: ${starts}`);
  for (let i = 1; i < starts.length; i++) {
    assert.ok(starts[i] - starts[i - 1] >= 10, `runs at ${starts}`);
  }
  await t.scheduler.stop();
});

Deno.test("Scheduler runs once more when asked during a run, never two at once", async () => {
  let release: () => void = () => {};
  let active = 0, maxActive = 0;
  const t = setup({
    outcome: async () => {
      maxActive = Math.max(maxActive, ++active);
      await new Promise<void>((r) => release = r);
      active--;
      return true;
    },
  });
  t.scheduler.start();
  await t.clock.tickAsync(10);
  assert.equal(t.runs.length, 1);
  t.scheduler.trigger("a");
  t.scheduler.trigger("b");
  await t.clock.tickAsync(100);
  assert.equal(t.runs.length, 1, "no second run while the first is still running");
  release();
  await t.scheduler.idle();
  await t.clock.tickAsync(10);
  assert.equal(t.runs.length, 2);
  assert.equal(t.runs[1].reason, "a,b");
  release();
  await t.scheduler.idle();
  assert.equal(maxActive, 1);
  await t.scheduler.stop();
});

Deno.test("Scheduler runs again the maximum interval after the last run without being asked", async () => {
  const t = setup();
  t.scheduler.start();
  await t.settle(10);
  await t.settle(59_999);
  assert.equal(t.runs.length, 1);
  await t.settle(1);
  await t.settle(60_000);
  assert.deepEqual(t.runs.map((r) => `${r.reason}@${r.at}`), [
    "start@10",
    "resync@60010",
    "resync@120010",
  ]);
  await t.scheduler.stop();
});

Deno.test("Scheduler retries a failed run with a doubling delay until it succeeds", async () => {
  let failures = 3;
  const t = setup({ outcome: () => failures-- <= 0 });
  t.scheduler.start();
  await t.settle(10);
  await t.settle(100);
  await t.settle(200);
  await t.settle(400);
  await t.settle(800);
  assert.deepEqual(t.runs.map((r) => `${r.reason}@${r.at}`), [
    "start@10",
    "retry@110",
    "retry@310",
    "retry@710",
  ]);
  await t.scheduler.stop();
});

Deno.test("Scheduler counts a run that throws as failed and keeps scheduling", async () => {
  let fail = true;
  const t = setup({
    outcome: () => {
      if (fail) throw new Error("boom");
      return true;
    },
  });
  t.scheduler.start();
  await t.settle(10);
  fail = false;
  await t.settle(100);
  assert.deepEqual(t.runs.map((r) => r.reason), ["start", "retry"]);
  await t.scheduler.stop();
});

Deno.test("Scheduler.runNow() runs at once and resolves with that run's result", async () => {
  const t = setup();
  t.scheduler.start();
  assert.equal(await t.scheduler.runNow("cni"), true);
  assert.deepEqual(t.runs, [{ reason: "start,cni", at: 0 }]);
  await t.scheduler.stop();
});

Deno.test("Scheduler.runNow() during a run resolves with the next run, which started after it", async () => {
  let release: () => void = () => {};
  const t = setup({ outcome: () => new Promise((r) => release = () => r(true)) });
  t.scheduler.start();
  await t.clock.tickAsync(10);
  const now = t.scheduler.runNow("cni");
  release();
  await t.clock.tickAsync(0);
  assert.equal(t.runs.length, 2);
  release();
  assert.equal(await now, true);
  assert.equal(t.runs[1].reason, "cni");
  await t.scheduler.stop();
});

Deno.test("Scheduler.stop() cancels every timer and waits for the running run", async () => {
  let release: () => void = () => {};
  const t = setup({ outcome: () => new Promise((r) => release = () => r(false)) });
  t.scheduler.start();
  await t.clock.tickAsync(10);
  const pending = t.scheduler.runNow("late");
  let stopped = false;
  const stopping = t.scheduler.stop().then(() => stopped = true);
  await t.clock.tickAsync(0);
  assert.equal(stopped, false, "stop waits for the running run");
  release();
  await stopping;
  await assert.rejects(pending, /Stopped before the requested run/);
  t.scheduler.trigger();
  await t.clock.tickAsync(120_000);
  assert.equal(t.runs.length, 1);
  assert.equal(t.clock.countTimers(), 0);
});
