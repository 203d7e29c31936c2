/**
 * Fake time for code that takes a `Timers`: a `@sinonjs/fake-timers` clock
 * that only moves when the test says so, without touching the globals (so
 * real I/O in the same test keeps real time).
 */
import FakeTimers from "@sinonjs/fake-timers";
import type { Timers } from "../../lib/time/timers.ts";

/** A fake clock starting at `start` ms and the Timers that read it. */
export function fakeTime(start = 0) {
  const clock = FakeTimers.createClock(start);
  const timers: Timers = {
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimeout: (id) => clock.clearTimeout(id as number),
    now: () => clock.now,
  };
  return { clock, timers };
}
