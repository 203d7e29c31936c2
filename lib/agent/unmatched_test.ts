import assert from "node:assert/strict";
import { desiredRanges, UnmatchedLedger, unmatchedMessage } from "./unmatched.ts";
import { parseCidr } from "../net/cidr.ts";
import type { DesiredTarget } from "../rules/desired_target.ts";

const pod = (name: string) => ({ namespace: "ns", name, uid: `uid-${name}` });
const target = (address: string, networkId: number, name: string): DesiredTarget => ({
  entry: {
    key: { family: address.includes(":") ? "ipv6" : "ipv4", address, port: 80 },
    value: { networkId, mark: 1 },
  },
  network: `net${networkId}`,
  pod: pod(name),
  container: "c",
  probe: "readiness",
  handler: "tcpSocket",
});

Deno.test("desiredRanges() holds the operator's CIDRs under no network and each pod address under its own", () => {
  const got = desiredRanges([parseCidr("10.244.0.0/16", 9)], [
    target("10.244.1.10", 1, "a"),
    target("10.244.1.10", 1, "a"),
    target("fd00::5", 2, "b"),
  ]);
  assert.deepEqual(got.map((r) => `${r.address}/${r.prefix} ${r.networkId}`), [
    "10.244.0.0/16 0",
    "10.244.1.10/32 1",
    "fd00::5/128 2",
  ]);
});

Deno.test("desiredRanges() counts an address two networks claim under neither", () => {
  const got = desiredRanges([], [target("10.0.0.1", 1, "a"), target("10.0.0.1", 2, "b")]);
  assert.deepEqual(got.map((r) => r.networkId), [0]);
});

const key = { family: "ipv4" as const, address: "10.244.1.10", port: 8081 };
const owner = { pod: pod("a"), network: "net1" };

Deno.test("the ledger logs and sends an Event for the owning pod once per destination per interval", () => {
  let now = 0;
  const ledger = new UnmatchedLedger({ timers: { now: () => now }, intervalMs: 60_000 });
  const first = ledger.record(key, 1, owner);
  assert.match(first.log!.message, /10\.244\.1\.10:8081 matched no probe target.*\{owner\}$/);
  assert.deepEqual(first.log!.values, { owner: "pod ns/a (network net1)" });
  assert.deepEqual(first.event, { pod: owner.pod, message: unmatchedMessage(key) });
  now = 59_999;
  assert.deepEqual(ledger.record(key, 1, owner), {});
  now = 60_000;
  assert.ok(ledger.record(key, 1, owner).event);
  assert.equal(ledger.recent()[0].reports, 3);
});

Deno.test("the ledger's Event message names the destination and says the probe cannot reach it", () => {
  assert.match(
    unmatchedMessage(key),
    /^the kubelet connected to 10\.244\.1\.10:8081, which is not a probe target of this pod: the probe cannot reach it/,
  );
});

Deno.test("the ledger logs a destination no known pod owns, without an Event", () => {
  const ledger = new UnmatchedLedger({ timers: { now: () => 0 } });
  const action = ledger.record(key, 0, undefined);
  assert.equal(action.log!.values.owner, "no pod this agent knows");
  assert.equal(action.event, undefined);
});

Deno.test("the ledger keeps the most recent destinations, newest first, up to its limit", () => {
  const ledger = new UnmatchedLedger({ timers: { now: () => 0 }, keep: 2 });
  for (const port of [1, 2, 3, 2]) ledger.record({ ...key, port }, 1, owner);
  assert.deepEqual(ledger.recent().map((v) => v.port), [2, 3]);
});
