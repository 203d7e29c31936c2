import assert from "node:assert/strict";
import type { UnmatchedMaps } from "../datapath/unmatched_maps.ts";
import type { PodRange } from "../net/cidr.ts";
import type { UnmatchedReport } from "../datapath/pod_ranges.ts";
import { setupLogging } from "../log/setup.ts";
import { noopEventSink } from "../kube/event_sink.ts";
import type { AgentSnapshot } from "./snapshot.ts";
import type { DesiredTarget } from "../rules/desired_target.ts";
import { UnmatchedWatch } from "./unmatched_watch.ts";

const target = (address: string): DesiredTarget => ({
  entry: { key: { family: "ipv4", address, port: 80 }, value: { networkId: 1, mark: 1 } },
  network: "net1",
  pod: { namespace: "ns", name: "a", uid: "uid-a" },
  container: "c",
  probe: "readiness",
  handler: "tcpSocket",
});

/** A targets list that counts how often it is walked. */
function countedTargets(addresses: string[]): { list: DesiredTarget[]; walks: () => number } {
  const list = addresses.map(target);
  let walks = 0;
  const values = list[Symbol.iterator].bind(list);
  list[Symbol.iterator] = () => {
    walks++;
    return values();
  };
  return { list, walks: () => walks };
}

/** The watch on maps that record each write of the ranges and have no reports. */
function watchOf(view: () => Readonly<AgentSnapshot>) {
  const writes: PodRange[][] = [];
  const maps = {
    syncRanges(want: PodRange[]) {
      writes.push(want);
      return { put: want.length, removed: 0 };
    },
    reportReader: () => ({ consume() {}, close() {} }),
  } as unknown as UnmatchedMaps;
  const watch = new UnmatchedWatch({ maps, cidrs: [], view, events: noopEventSink });
  return { watch, writes };
}

Deno.test("the watch works the pod ranges out again only when the agent's targets list changes", () => {
  const first = countedTargets(["10.0.0.1", "10.0.0.2"]);
  let snapshot = { targets: first.list } as AgentSnapshot;
  const { watch, writes } = watchOf(() => snapshot);
  watch.tick();
  watch.tick();
  watch.syncRanges();
  assert.equal(first.walks(), 1, "the same list was walked once");
  assert.equal(writes.length, 1);

  const second = countedTargets(["10.0.0.3"]);
  snapshot = { targets: second.list } as AgentSnapshot;
  watch.tick();
  assert.equal(second.walks(), 1);
  assert.deepEqual(writes.map((w) => w.map((r) => r.address)), [
    ["10.0.0.1", "10.0.0.2"],
    ["10.0.0.3"],
  ]);
  watch.stop();
});

Deno.test("the watch writes the pod ranges again at the next tick after a failed write", () => {
  const { list } = countedTargets(["10.0.0.1"]);
  let fail = true;
  const attempts: PodRange[][] = [];
  const maps = {
    syncRanges(want: PodRange[]) {
      attempts.push(want);
      if (fail) throw new Error("map update failed");
      return { put: want.length, removed: 0 };
    },
    reportReader: () => ({ consume() {}, close() {} }),
  } as unknown as UnmatchedMaps;
  const watch = new UnmatchedWatch({
    maps,
    cidrs: [],
    view: () => ({ targets: list }) as AgentSnapshot,
    events: noopEventSink,
  });
  watch.tick();
  fail = false;
  watch.tick();
  watch.tick();
  assert.equal(attempts.length, 2, "retried once, then up to date");
  watch.stop();
});

Deno.test("the watch logs a pod's network name as it is, never read as a log template", () => {
  // A name may hold braces (lib/probe/network_name.ts): in a template, {x} would be a missing value
  // and {constructor} Object's, so the line would name a network nobody has.
  const network = "blue{x}{constructor}";
  const snapshot = { targets: [{ ...target("10.0.0.1"), network }] } as AgentSnapshot;
  const report: UnmatchedReport = {
    key: { family: "ipv4", address: "10.0.0.1", port: 81 },
    networkId: 1,
  };
  const maps = {
    syncRanges: () => ({ put: 0, removed: 0 }),
    reportReader: (onReport: (r: UnmatchedReport) => void) => ({
      consume: () => onReport(report),
      close() {},
    }),
  } as unknown as UnmatchedMaps;
  const out: string[] = [];
  setupLogging("info", "json", (bytes) => out.push(new TextDecoder().decode(bytes)));
  try {
    new UnmatchedWatch({ maps, cidrs: [], view: () => snapshot, events: noopEventSink }).tick();
  } finally {
    setupLogging("info", "json", () => {});
  }
  const lines = out.map((l) => JSON.parse(l)).filter((r) => /matched no probe/.test(r.message));
  assert.equal(lines.length, 1, out.join(""));
  assert.match(lines[0].message, /10\.0\.0\.1:81.*pod ns\/a \(network blue\{x\}\{constructor\}\)/);
});
