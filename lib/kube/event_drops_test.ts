import assert from "node:assert/strict";
import { EventDrops } from "./event_drops.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { recordingLogger } from "../../tests/helpers/recording_logger.ts";

Deno.test("a flood of drops is one log line, then one summary per interval, each counted", async () => {
  const { clock, timers } = fakeTime();
  const { lines, logger } = recordingLogger();
  const metric: string[] = [];
  const drops = new EventDrops({
    intervalMs: 60_000,
    timers,
    logger,
    onDrop: (reason, count) => metric.push(`${reason} ${count}`),
  });
  for (let i = 0; i < 1000; i++) drops.drop("namespace-full", `AttachRefused on Pod a/p-${i}`);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /^warning: Dropped Event AttachRefused on Pod a\/p-0: its namespace/);
  assert.match(lines[0], /lace_events_dropped_total\{reason=namespace-full\}/);
  assert.equal(drops.counts["namespace-full"], 1000);
  assert.equal(metric.length, 1000);
  await clock.tickAsync(59_999);
  assert.equal(lines.length, 1);
  await clock.tickAsync(1);
  assert.equal(lines.length, 2);
  assert.match(lines[1], /Dropped 999 more Events in the last 60 s .* the last: .*p-999$/);
  drops.drop("namespace-full", "ProbeIgnored on Pod a/q");
  await clock.tickAsync(60_000);
  assert.match(lines[2], /Dropped 1 more Events .* the last: ProbeIgnored on Pod a\/q$/);
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 3, "a quiet interval writes nothing and ends the summing up");
  assert.equal(clock.countTimers(), 0);
  drops.drop("namespace-full", "ProbeIgnored on Pod a/r");
  assert.equal(lines.length, 4, "the first drop after a quiet spell is logged at once");
  drops.stop();
  assert.equal(clock.countTimers(), 0);
});

Deno.test("each reason has its own log line and count", () => {
  const { timers } = fakeTime();
  const { lines, logger } = recordingLogger();
  const drops = new EventDrops({ intervalMs: 1000, timers, logger });
  drops.drop("namespace-full", "A on Pod a/x");
  drops.drop("namespace-full", "A on Pod a/y");
  drops.drop("displaced", "B on Pod b/x");
  drops.drop("rate-limited", "C on Pod c/x");
  drops.drop("shutdown", "7 queued Events", 7);
  assert.equal(lines.length, 4);
  assert.match(lines[2], /^info: .*rate-limited/);
  drops.drop("namespace-full", "A on Pod a/z");
  drops.stop();
  assert.match(lines[4], /^warning: Dropped 2 more Events .* the last: A on Pod a\/z$/);
  assert.deepEqual(drops.counts, {
    "rate-limited": 1,
    "namespace-full": 3,
    "queue-full": 0,
    "displaced": 1,
    "invalid": 0,
    "api-error": 0,
    "shutdown": 7,
  });
});
