import assert from "node:assert/strict";
import { aboutInput, aboutPod, installLogLimiter, limitedLog, LogLimiter } from "./limiter.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { recordingLogger } from "../../tests/helpers/recording_logger.ts";

function limitedWorld(maxKeys?: number) {
  const { clock, timers } = fakeTime();
  const { lines, logger } = recordingLogger();
  const limiter = new LogLimiter({ intervalMs: 60_000, timers, maxKeys, overflowLogger: logger });
  const skip = (namespace: string, pod: string) =>
    limiter.log(
      logger,
      "warning",
      { reason: "ProbeIgnored", namespace, subject: `pod ${namespace}/${pod}` },
      "Pod {pod}: {message}",
      { pod: `${namespace}/${pod}`, message: "port 80 is not in the spec" },
    );
  return { clock, lines, limiter, skip };
}

Deno.test("a flood of 5000 lines of one reason and namespace is 10 lines, then one summary a window with the count", async () => {
  const { clock, lines, limiter, skip } = limitedWorld();
  for (let i = 0; i < 5000; i++) skip("tenant", `p-${i}`);
  assert.deepEqual(
    lines,
    Array.from({ length: 10 }, (_, i) => `warning: Pod tenant/p-${i}: port 80 is not in the spec`),
  );
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 11);
  assert.match(
    lines[10],
    /^warning: And 4990 more ProbeIgnored lines about namespace tenant in the last 60 s .*; the last: pod tenant\/p-4999$/,
  );
  for (let i = 0; i < 5000; i++) skip("tenant", `q-${i}`);
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 12, "a flood that goes on is one summary a window");
  assert.match(lines[11], /And 5000 more ProbeIgnored lines about namespace tenant/);
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 12, "a quiet window writes nothing and closes");
  assert.equal(clock.countTimers(), 0);
  skip("tenant", "r");
  assert.equal(lines.at(-1), "warning: Pod tenant/r: port 80 is not in the spec");
  limiter.stop();
  assert.equal(clock.countTimers(), 0);
});

Deno.test("a victim namespace's first line is logged at once during another namespace's flood", () => {
  const { lines, limiter, skip } = limitedWorld();
  for (let i = 0; i < 5000; i++) skip("attacker", `p-${i}`);
  skip("victim", "web");
  for (let i = 0; i < 5000; i++) skip("attacker", `q-${i}`);
  assert.equal(lines.length, 11);
  assert.equal(lines[10], "warning: Pod victim/web: port 80 is not in the spec");
  limiter.stop();
  assert.match(lines[11], /And 9990 more ProbeIgnored lines about namespace attacker/);
  assert.equal(lines.length, 12, "stop sums up only the windows with lines held back");
});

Deno.test("keys beyond maxKeys share one overflow window: windows and lines stay bounded", async () => {
  const { clock, lines, limiter, skip } = limitedWorld(16);
  for (let i = 0; i < 5000; i++) skip(`ns-${i}`, "p");
  assert.equal(limiter.openKeys, 17);
  assert.equal(lines.length, 26, "16 keys and the first 10 lines beyond them, in full");
  assert.equal(lines[25], "warning: Pod ns-25/p: port 80 is not in the spec");
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 27);
  assert.match(
    lines[26],
    /^warning: And 4974 more lines in the last 60 s about reasons and namespaces beyond the 16 .*; the last: pod ns-4999\/p$/,
  );
  await clock.tickAsync(60_000);
  assert.equal(limiter.openKeys, 0, "quiet windows close, so new namespaces get their own again");
  skip("ns-late", "p");
  assert.equal(lines.at(-1), "warning: Pod ns-late/p: port 80 is not in the spec");
  limiter.stop();
});

Deno.test("limitedLog logs every line with no limiter installed, and through the one installed", () => {
  const { lines, logger } = recordingLogger();
  const key = { reason: "AttachRefused", namespace: "t" };
  for (let i = 0; i < 3; i++) limitedLog(logger, "warning", key, "Refused {i}", { i });
  assert.equal(lines.length, 3);
  const { timers } = fakeTime();
  const limiter = new LogLimiter({ timers, overflowLogger: logger, burst: 1 });
  const uninstall = installLogLimiter(limiter);
  try {
    for (let i = 0; i < 3; i++) limitedLog(logger, "warning", key, "Refused {i}", { i });
  } finally {
    uninstall();
  }
  assert.equal(lines.length, 4);
  limitedLog(logger, "warning", key, "Refused {i}", { i: 9 });
  assert.equal(lines.length, 5, "uninstalled: in full again");
  limiter.stop();
  assert.match(
    lines[5],
    /^warning: And 2 more AttachRefused lines about namespace t .*the last: \(unnamed\)$/,
  );
});

Deno.test("lines keyed by aboutPod are limited by reason and namespace: a tenant's flood hides no other tenant's first line nor its own other reasons, and the summary names its last pod", async () => {
  const { clock, timers } = fakeTime();
  const { lines, logger } = recordingLogger();
  const limiter = new LogLimiter({ timers, overflowLogger: logger });
  const line = (reason: string, pod: { namespace: string; name: string }) =>
    limiter.log(logger, "warning", aboutPod(reason, pod), "{reason} pod {pod}", {
      reason,
      pod: `${pod.namespace}/${pod.name}`,
    });
  for (let i = 0; i < 5000; i++) line("AttachRefused", { namespace: "attacker", name: `p-${i}` });
  line("AttachRefused", { namespace: "victim", name: "web" });
  line("ProbeIgnored", { namespace: "attacker", name: "x" });
  assert.equal(lines.length, 12);
  assert.deepEqual(lines.slice(10), [
    "warning: AttachRefused pod victim/web",
    "warning: ProbeIgnored pod attacker/x",
  ]);
  await clock.tickAsync(60_000);
  assert.equal(lines.length, 13);
  assert.match(
    lines[12],
    /^warning: And 4990 more AttachRefused lines about namespace attacker in the last 60 s .*; the last: pod attacker\/p-4999$/,
  );
  limiter.stop();
});

Deno.test("aboutInput keys a malformed object by the metadata strings it has, as aboutPod keys a pod", () => {
  assert.deepEqual(aboutInput("PodMalformed", { metadata: { namespace: "t", name: "web" } }), {
    reason: "PodMalformed",
    namespace: "t",
    subject: "pod t/web",
  });
  assert.deepEqual(aboutInput("PodMalformed", { metadata: { namespace: "t", name: 7 } }), {
    reason: "PodMalformed",
    namespace: "t",
    subject: "pod t/",
  });
  for (const input of [null, "text", { metadata: null }, { metadata: [] }]) {
    assert.deepEqual(aboutInput("PodMalformed", input), {
      reason: "PodMalformed",
      namespace: "",
      subject: "pod /",
    }, JSON.stringify(input));
  }
});
