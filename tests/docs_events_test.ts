/**
 * Event reasons, both ways: the ones the README and docs/ name must be recorded by the code (or
 * be the kubelet's own), and every one the code records must be explained in
 * docs/troubleshooting.md.
 */
import assert from "node:assert/strict";
import { EVENT_REASONS, namedEventReasons, recordedEventReasons } from "./helpers/docs_events.ts";
import { pagesNameNothingMissing } from "./helpers/docs_page_problems.ts";
import { PAGES } from "./helpers/docs_pages.ts";

pagesNameNothingMissing("events");

Deno.test("every Event reason the code records is explained in docs/troubleshooting.md", () => {
  // Guards the scan: the recorder's calls read differently would find nothing, and pass.
  assert.ok(EVENT_REASONS.size >= 15, `only ${[...EVENT_REASONS].join(", ")} found in lib/`);
  const page = PAGES.find((p) => p.path === "docs/troubleshooting.md")!;
  const explained = new Set(namedEventReasons(page.prose));
  assert.deepEqual([...EVENT_REASONS].filter((r) => !explained.has(r)).sort(), []);
});

Deno.test("recordedEventReasons() finds the recorder's and the follower's reasons, not log lines", () => {
  const source = [
    'events.warn(podObjectRef(p.pod), "AddressClash", message(a, p));',
    'this.events.normal(node,\n  "Attached", text);',
    'events?.emit("Warning", "KubeletLookalike", text);',
    'const EVENT_REASONS: Record<R, string> = { chained: "CniChained", failed: "CniChainFailed" };',
    'log.warn("Not attached: {reason}", { reason });',
    'limitedLog(log, "warning", aboutPod("ProbeIgnored", pod), "Pod {pod}", {});',
  ].join("\n");
  assert.deepEqual(
    [...recordedEventReasons(source)].sort(),
    ["AddressClash", "Attached", "CniChainFailed", "CniChained", "KubeletLookalike"],
  );
});

Deno.test("namedEventReasons() reads Event `X` in prose and the first column of Event tables", () => {
  const prose = [
    "a Warning Event `AttachRefused` on the pod, Events `ProbeIgnored` too; not `Other`.",
    "",
    "| Event reason | Meaning |",
    "|---|---|",
    "| `CniChained`, `CniChainRestored` (Normal) | chained |",
    "",
    "| Check | Meaning |",
    "|---|---|",
    "| `bpffs` | no |",
  ].join("\n");
  assert.deepEqual(namedEventReasons(prose), [
    "AttachRefused",
    "ProbeIgnored",
    "CniChained",
    "CniChainRestored",
  ]);
});
