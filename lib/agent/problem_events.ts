/**
 * What each problem the agent core reports becomes for the pod's author and the operator: a
 * Warning Event on the pod, its reason naming the problem, and for a refused CNI ADD a count in
 * lace_cni_add_refusals_total by reason. The core finds the problems (problems.ts reports each
 * once while it persists); start.ts hands these hooks to it.
 */
import { type EventSink, podObjectRef } from "../kube/event_sink.ts";
import { addressClashMessage } from "../rules/address_holders.ts";
import { conflictMessage, refusalMessage } from "../rules/conflicts.ts";
import { networkMismatchMessage } from "../rules/pod_network.ts";
import { SECOND_NETWORK_REFUSAL } from "./admission/refusals.ts";
import type { AgentCoreOptions } from "./core.ts";
import { HOST_ADDRESS_REFUSAL, OUTSIDE_POD_RANGES_REFUSAL } from "../rules/desired_state.ts";
import type { Metrics } from "./metrics.ts";

/** The core's problem and refusal hooks, as Events through `events` and refusal counts. */
export function problemEvents(
  events: EventSink,
  metrics: Pick<Metrics, "attachRefusals">,
): Pick<
  AgentCoreOptions,
  | "onSkip"
  | "onConflict"
  | "onUnwritten"
  | "onAddressClash"
  | "onNetworkMismatch"
  | "onHostAddressRefused"
  | "onOutsidePodRangesRefused"
  | "onSecondNetworkRefused"
  | "onAttachRefused"
> {
  return {
    onSkip: (skip) => events.warn(podObjectRef(skip.pod), "ProbeIgnored", skip.message),
    onConflict: (c, dropped) =>
      events.warn(podObjectRef(dropped.pod), "ProbeTargetConflict", conflictMessage(c, dropped)),
    onUnwritten: (u) => events.warn(podObjectRef(u.pod), "ProbeTargetsNotWritten", u.message),
    onAddressClash: (a, p) =>
      events.warn(podObjectRef(p.pod), "AddressClash", addressClashMessage(a, p)),
    onNetworkMismatch: (m) =>
      events.warn(
        podObjectRef(m.pod),
        "NetworkAnnotationMismatch",
        networkMismatchMessage(m),
      ),
    onHostAddressRefused: (a, address) => {
      metrics.attachRefusals.inc({ reason: "host-address" });
      events.warn(podObjectRef(a), "AttachRefused", `Address ${address} ${HOST_ADDRESS_REFUSAL}`);
    },
    onOutsidePodRangesRefused: (a, address) => {
      metrics.attachRefusals.inc({ reason: "outside-pod-ranges" });
      events.warn(
        podObjectRef(a),
        "AttachRefused",
        `Address ${address} ${OUTSIDE_POD_RANGES_REFUSAL}`,
      );
    },
    onSecondNetworkRefused: (a) => {
      metrics.attachRefusals.inc({ reason: "second-network" });
      events.warn(podObjectRef(a), "AttachRefused", SECOND_NETWORK_REFUSAL);
    },
    onAttachRefused: (a, clashes, networkUnknown) => {
      metrics.attachRefusals.inc({ reason: "address-conflict" });
      events.warn(podObjectRef(a), "AttachRefused", refusalMessage(clashes, networkUnknown));
    },
  };
}
