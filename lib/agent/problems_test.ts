import assert from "node:assert/strict";
import { ProblemReporter } from "./problems.ts";
import type { Skip } from "../rules/skip.ts";
import { limitedLogCapture } from "../../tests/helpers/limited_log.ts";

function skip(namespace: string, pod: string, i: number): Skip {
  return {
    pod: { namespace, name: pod, uid: `${namespace}-${pod}` },
    container: `c${i}`,
    probe: "liveness",
    reason: "named-port",
    message: `port no-port-${i} is not in the spec`,
  };
}

Deno.test("a tenant's 1250 skipped probes are 10 log lines and a summary, and every one reaches its hook", async () => {
  using log = limitedLogCapture();
  const { clock, messages } = log;
  let hooked = 0;
  const reporter = new ProblemReporter({ onSkip: () => hooked++ });
  const skips: Skip[] = [];
  for (let p = 0; p < 50; p++) {
    for (let i = 0; i < 25; i++) skips.push(skip("flood", `f-${p}`, i));
    if (p === 25) skips.push(skip("victim", "web", 0));
  }
  reporter.report({ skips, conflicts: [], mismatches: [], unwritten: [] });
  assert.equal(hooked, 1251, "Events get every skip");
  assert.deepEqual(messages, [
    ...Array.from(
      { length: 10 },
      (_, i) => `Pod "flood/f-0": "port no-port-${i} is not in the spec"`,
    ),
    'Pod "victim/web": "port no-port-0 is not in the spec"',
  ]);
  await clock.tickAsync(60_000);
  assert.equal(messages.length, 12);
  assert.match(
    messages[11],
    /^And 1240 more "ProbeIgnored" lines about namespace "flood" in the last 60 s .*the last: "pod flood\/f-49"$/,
  );
});
