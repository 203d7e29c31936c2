import assert from "node:assert/strict";
import type { EventSink, ObjectRef } from "../kube/event_sink.ts";
import { problemEvents } from "./problem_events.ts";
import { SECOND_NETWORK_REFUSAL } from "./admission/refusals.ts";
import { HOST_ADDRESS_REFUSAL, OUTSIDE_POD_RANGES_REFUSAL } from "../rules/desired_state.ts";

/** Events and refusal counts as problemEvents() sends them. */
function recorded() {
  const sent: { type: string; object: ObjectRef; reason: string; message: string }[] = [];
  const refusals: string[] = [];
  const events: EventSink = {
    warn: (object, reason, message) => sent.push({ type: "Warning", object, reason, message }),
    normal: (object, reason, message) => sent.push({ type: "Normal", object, reason, message }),
  };
  const metrics = { attachRefusals: { inc: (l: { reason: string }) => refusals.push(l.reason) } };
  return { hooks: problemEvents(events, metrics as never), sent, refusals };
}

const attachment = { namespace: "ns", name: "newcomer", uid: "u1", ips: ["10.0.0.5"] };

Deno.test("problemEvents() makes a skipped probe a Warning ProbeIgnored Event on its pod", () => {
  const { hooks, sent, refusals } = recorded();
  hooks.onSkip!({
    pod: { namespace: "ns", name: "a", uid: "ua" },
    reason: "annotation",
    message: "no such network",
  });
  assert.deepEqual(sent.map((e) => [e.type, e.object.name, e.object.uid, e.reason, e.message]), [
    ["Warning", "a", "ua", "ProbeIgnored", "no such network"],
  ]);
  assert.deepEqual(refusals, []);
});

Deno.test("problemEvents() counts each refused CNI ADD by reason and tells the pod why", () => {
  const { hooks, sent, refusals } = recorded();
  hooks.onHostAddressRefused!(attachment, "10.0.0.5");
  hooks.onOutsidePodRangesRefused!(attachment, "10.0.0.5");
  hooks.onSecondNetworkRefused!(attachment);
  hooks.onAttachRefused!(attachment, [], true);
  assert.deepEqual(refusals, [
    "host-address",
    "outside-pod-ranges",
    "second-network",
    "address-conflict",
  ]);
  assert.deepEqual(
    sent.map((e) => [e.type, e.object.name, e.reason]),
    Array(4).fill(["Warning", "newcomer", "AttachRefused"]),
  );
  assert.equal(sent[0].message, `Address 10.0.0.5 ${HOST_ADDRESS_REFUSAL}`);
  assert.equal(sent[1].message, `Address 10.0.0.5 ${OUTSIDE_POD_RANGES_REFUSAL}`);
  assert.equal(sent[2].message, SECOND_NETWORK_REFUSAL);
});
