import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { directedPairs, type Pair } from "./directed.ts";
import { EndpointLocks, schedulePairs } from "./scheduler.ts";

function names(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `pod-${i}`);
}

/**
 * Runs a schedule whose tasks take a pseudo-random 0-2 ms of fake time,
 * checking the rules as they run.
 */
async function checkedRun(n: number, concurrency: number, exclusive: boolean) {
  // One timer per pair at most: allow all of them.
  const clock = FakeTimers.createClock(0, n * n);
  const busy = new Set<string>();
  const counts = new Map<string, number>();
  const violations: string[] = [];
  let active = 0, maxActive = 0, seed = 7;
  const done = schedulePairs(
    directedPairs(names(n)),
    (e) => e,
    async ({ from, to }: Pair<string>) => {
      active++;
      maxActive = Math.max(maxActive, active);
      if (exclusive) {
        for (const e of [from, to]) {
          if (busy.has(e)) violations.push(`${e} shared while ${from}→${to} started`);
          busy.add(e);
        }
      }
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      await new Promise((r) => clock.setTimeout(r, seed % 3));
      if (exclusive) busy.delete(from), busy.delete(to);
      counts.set(`${from}>${to}`, (counts.get(`${from}>${to}`) ?? 0) + 1);
      active--;
    },
    { concurrency, exclusive },
  );
  await clock.runAllAsync();
  await done;
  return { counts, violations, maxActive };
}

Deno.test("schedulePairs() runs every directed pair exactly once", async () => {
  const { counts } = await checkedRun(40, 16, true);
  assert.equal(counts.size, 40 * 39);
  assert.ok([...counts.values()].every((c) => c === 1));
});

Deno.test("schedulePairs() in exclusive mode never lets two running pairs share an endpoint", async () => {
  const { violations, maxActive } = await checkedRun(40, 16, true);
  assert.deepEqual(violations, []);
  assert.ok(maxActive > 1, "disjoint pairs should run in parallel");
});

Deno.test("schedulePairs() respects the concurrency bound and fills it", async () => {
  const { maxActive } = await checkedRun(30, 5, false);
  assert.equal(maxActive, 5);
  const exclusive = await checkedRun(30, 8, true);
  assert.ok(exclusive.maxActive <= 8);
});

Deno.test("schedulePairs() handles thousands of pairs with an odd node count", async () => {
  const { counts, violations } = await checkedRun(61, 16, true);
  assert.equal(counts.size, 61 * 60);
  assert.deepEqual(violations, []);
});

/** Runs a bandwidth-like schedule on fake time; returns when each pair started and the end. */
async function timedRun(
  n: number,
  concurrency: number,
  durationOf: (pair: Pair<string>) => number,
  window?: number,
) {
  // One timer per pair: allow all of them.
  const clock = FakeTimers.createClock(0, n * n);
  const starts: number[] = [];
  let active = 0, maxActive = 0;
  const done = schedulePairs(directedPairs(names(n)), (e) => e, async (pair) => {
    starts.push(clock.now);
    maxActive = Math.max(maxActive, ++active);
    await new Promise((r) => clock.setTimeout(r, durationOf(pair)));
    active--;
  }, { concurrency, exclusive: true, window });
  await clock.runAllAsync();
  await done;
  return { starts, end: clock.now, maxActive };
}

Deno.test("schedulePairs() runs equal sessions in exactly the 2(N−1) rounds the locks allow", async () => {
  for (const n of [2, 4, 10, 20, 40]) {
    const { starts, end } = await timedRun(n, n / 2, () => 1000);
    assert.equal(starts.length, n * (n - 1));
    assert.equal(end, 2 * (n - 1) * 1000, `${n} nodes`);
    // Every round starts all n/2 of its pairs together.
    assert.equal(new Set(starts).size, 2 * (n - 1));
  }
});

Deno.test("schedulePairs() with an odd node count runs equal sessions in 2N rounds", async () => {
  // (N−1)/2 pairs at once at most, so N(N−1) pairs need 2N rounds.
  const n = 9;
  const { end } = await timedRun(n, (n - 1) / 2, () => 1000);
  assert.equal(end, 2 * n * 1000);
});

Deno.test("schedulePairs() keeps nodes busy while one path is slow", async () => {
  // Every path out of pod-0 takes five rounds: the rest of the schedule goes
  // on around them, so the run ends close to pod-0's own busy time.
  const n = 10;
  const { end } = await timedRun(n, n / 2, (p) => p.from === "pod-0" ? 5000 : 1000);
  // pod-0's own sessions: n−1 slow ones out of it, n−1 normal ones into it.
  const bound = (n - 1) * (5000 + 1000);
  assert.ok(end <= bound * 1.1, `took ${end} ms, pod-0 alone needs ${bound} ms`);
});

Deno.test("schedulePairs() starts no pair after an abort and waits for the running ones", async () => {
  const controller = new AbortController();
  let started = 0, startedAfterAbort = 0, finished = 0;
  await schedulePairs(directedPairs(names(20)), (e) => e, async () => {
    if (controller.signal.aborted) startedAfterAbort++;
    started++;
    await new Promise((r) => setTimeout(r, 1));
    // The abort arrives as a task ends, as a signal handler's would: between starts.
    if (++finished === 10) controller.abort();
  }, { concurrency: 4, exclusive: true, signal: controller.signal });
  assert.equal(startedAfterAbort, 0);
  assert.ok(started >= 10 && started < 20 * 19, `${started} started`);
  assert.equal(finished, started, "every started pair settled before the schedule ended");
});

/** Lets every pending promise reaction run (the schedule is driven by promises only). */
const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("schedulePairs() re-throws the first task error only after running tasks settle, starting no more", async () => {
  const started: string[] = [];
  const finish: ((error?: Error) => void)[] = [];
  const run: { outcome: unknown } = { outcome: "pending" };
  schedulePairs(directedPairs(names(4)), (e) => e, async ({ from, to }) => {
    started.push(`${from}>${to}`);
    if (started.length === 1) {
      await Promise.resolve();
      throw new Error("first");
    }
    await new Promise<void>((resolve, reject) =>
      finish.push((error) => error ? reject(error) : resolve())
    );
  }, { concurrency: 3, exclusive: false }).then(
    () => run.outcome = "resolved",
    (e) => run.outcome = e,
  );
  await settle();
  assert.equal(started.length, 3);
  assert.equal(run.outcome, "pending", "two tasks still run");
  finish[0](new Error("second"));
  await settle();
  assert.equal(run.outcome, "pending", "one task still runs");
  finish[1]();
  await settle();
  // (The asserts above narrowed the type to "pending".)
  const outcome = run.outcome as unknown;
  assert.ok(outcome instanceof Error);
  assert.equal(outcome.message, "first");
  assert.equal(started.length, 3, "no pair starts after a failure");
});

Deno.test("EndpointLocks takes both locks or none", () => {
  const locks = new EndpointLocks();
  const [a, b, c, d] = [0, 1, 2, 3];
  assert.equal(locks.tryAcquire(b, a), true);
  assert.equal(locks.tryAcquire(c, b), false);
  assert.equal(locks.size, 2);
  assert.equal(locks.tryAcquire(c, d), true);
  locks.release(a, b);
  assert.equal(locks.tryAcquire(a, b), true);
  assert.equal(locks.isHeld(a), true);
  locks.release(a, b);
  assert.equal(locks.isHeld(a), false);
  assert.equal(locks.tryAcquire(a, a), false, "a pair needs two endpoints");
  // Endpoints beyond the first table grow it.
  assert.equal(locks.tryAcquire(5000, 7), true);
  assert.equal(locks.isHeld(5000), true);
  assert.equal(locks.tryAcquire(6000, 5000), false);
  assert.equal(locks.size, 4);
});

Deno.test("EndpointLocks keeps what it holds when its table grows, at 64 and at 128", () => {
  const locks = new EndpointLocks();
  assert.equal(locks.tryAcquire(0, 1), true);
  assert.equal(locks.tryAcquire(2, 64), true);
  assert.equal(locks.isHeld(64), true);
  assert.equal(locks.tryAcquire(1, 5), false, "endpoint 1 is still held");
  assert.deepEqual([0, 1, 2].map((e) => locks.isHeld(e)), [true, true, true]);
  assert.equal(locks.size, 4);
  // From 64 straight to 128: the table grows past it, not to it.
  const fresh = new EndpointLocks();
  assert.equal(fresh.tryAcquire(3, 128), true);
  assert.equal(fresh.isHeld(128), true);
});

Deno.test("EndpointLocks releasing endpoints it does not hold changes nothing", () => {
  const locks = new EndpointLocks();
  assert.equal(locks.tryAcquire(0, 1), true);
  locks.release(2, 3);
  locks.release(500, 600);
  assert.equal(locks.size, 2);
  assert.equal(locks.isHeld(0), true);
});

Deno.test("schedulePairs() keeps an endpoint's pairs in order past the first 64 endpoints", async () => {
  // 32 disjoint pairs give e0..e63 the first 64 slots; e0's lasts 10 ms, the others 1 ms. Then
  // b, the 65th endpoint, waits for e0 (its first pair) before it runs e2→b.
  const e = names(64);
  const pairs: Pair<string>[] = [];
  for (let k = 0; k < 64; k += 2) pairs.push({ from: e[k], to: e[k + 1] });
  pairs.push({ from: e[0], to: "b" }, { from: e[2], to: "b" });
  const clock = FakeTimers.createClock(0, 100);
  const started = new Map<string, number>();
  const done = schedulePairs(pairs, (x) => x, async ({ from, to }) => {
    started.set(`${from}>${to}`, clock.now);
    await new Promise((r) => clock.setTimeout(r, from === e[0] && to === e[1] ? 10 : 1));
  }, { concurrency: 32, exclusive: true });
  await clock.runAllAsync();
  await done;
  assert.equal(started.get(`${e[0]}>b`), 10);
  assert.equal(started.get(`${e[2]}>b`), 11);
});

const slowPath = (slow: string) => (p: Pair<string>) => `${p.from}>${p.to}` === slow ? 5000 : 1000;

Deno.test("schedulePairs() lets a node whose next partner is busy take a later pair instead of idling", async () => {
  // Five nodes, two at a time, one slow path: without taking later pairs the run needs 14 s.
  for (const slow of ["pod-2>pod-3", "pod-3>pod-1"]) {
    const { end, maxActive } = await timedRun(5, 2, slowPath(slow));
    assert.deepEqual([end, maxActive], [13_000, 2], slow);
  }
});

Deno.test("schedulePairs() keeps to the concurrency bound while taking later pairs", async () => {
  // Eight nodes, three at a time, one slow path: later pairs are taken, one at a time.
  assert.equal((await timedRun(8, 3, slowPath("pod-3>pod-4"))).maxActive, 3);
});

Deno.test("schedulePairs() in exclusive mode refills its window after each start", async () => {
  // A two-pair window refilled only once per turn needs 15 s here.
  assert.equal((await timedRun(6, 3, slowPath("pod-0>pod-1"), 2)).end, 14_000);
});

/** How many pairs the schedule had pulled from its source when the first task started. */
async function pulledAtFirstStart(options: { concurrency: number; window?: number }) {
  let pulled = 0, atFirst = -1;
  function* source() {
    for (const pair of directedPairs(names(20))) {
      pulled++;
      yield pair;
    }
  }
  await schedulePairs(source(), (e) => e, async () => {
    if (atFirst < 0) atFirst = pulled;
    await Promise.resolve();
  }, { ...options, exclusive: false });
  return atFirst;
}

Deno.test("schedulePairs() pulls pairs lazily: a window of 4 × concurrency, at least 64, or as given", async () => {
  assert.equal(await pulledAtFirstStart({ concurrency: 1 }), 64);
  assert.equal(await pulledAtFirstStart({ concurrency: 20 }), 80);
  assert.equal(await pulledAtFirstStart({ concurrency: 1, window: 5 }), 5);
  assert.equal(await pulledAtFirstStart({ concurrency: 1, window: 0 }), 1);
});

Deno.test("schedulePairs() fills the concurrency bound from a one-pair window", async () => {
  let active = 0, maxActive = 0;
  await schedulePairs(directedPairs(names(4)), (e) => e, async () => {
    maxActive = Math.max(maxActive, ++active);
    await new Promise((r) => setTimeout(r, 0));
    active--;
  }, { concurrency: 3, exclusive: false, window: 1 });
  assert.equal(maxActive, 3);
});
