/**
 * The doctor's checks of the running agent: health, readiness, the probe targets it knows
 * against the map, which targets the kubelet stopped reaching, and tagged connects.
 */
import type { AddressesView, TargetView, UnmatchedView } from "../agent_api/views.ts";
import { keyId } from "../probe/key.ts";
import { isHookKind } from "../rules/kinds.ts";
import { networkLabel } from "../probe/network_name.ts";
import { type Check, check, isError, type NodeSnapshot, START_AGENT } from "./check.ts";

/** The agent's health, readiness, targets and counters, in reading order. */
export function agentChecks(s: NodeSnapshot): Check[] {
  const a = s.agent;
  const out: Check[] = [];
  const healthy = a.healthz === 200;
  out.push(check(
    "agent-health",
    healthy,
    healthy
      ? `agent answers on ${a.addr}`
      : a.error ?? `agent's /healthz on ${a.addr} answered ${a.healthz}`,
    `${START_AGENT}; if it runs, check --agent-socket (LACE_AGENT_SOCKET) matches`,
  ));
  if (healthy) {
    const ready = a.readyz?.status === 200;
    out.push(check(
      "agent-ready",
      ready,
      ready ? "agent is ready" : `agent is not ready: ${a.readyz?.body.trim() || "no answer"}`,
      "see the reasons above and the agent's log (`journalctl -u lace-agent` or kubectl logs)",
    ));
  }
  if (isError(s.mapEntries)) {
    out.push(
      check(
        "probe-targets",
        false,
        `cannot read the probe map: ${s.mapEntries.error}`,
        START_AGENT,
        "warning",
      ),
    );
  } else {
    const agentCount = a.targets?.length;
    const agrees = agentCount === undefined || agentCount === s.mapEntries;
    out.push(check(
      "probe-targets",
      s.mapEntries > 0 && agrees,
      `${s.mapEntries} probe targets in the map` +
        (agentCount === undefined ? "" : `, ${agentCount} known to the agent`),
      s.mapEntries === 0
        ? "no pod on this node has a Lace network with probes: check the pods' network annotations"
        : "the agent repairs drift on its next resync; if it persists, check its log",
      "warning",
    ));
  }
  if (a.targets) out.push(staleTargetsCheck(a.targets));
  if (a.unmatched) out.push(unmatchedCheck(a.unmatched));
  if (a.addresses) out.push(addressSharingCheck(a.addresses));
  if (a.addresses?.hostHeld) {
    out.push(hostAddressesCheck(a.addresses.hostHeld, a.addresses.apiServer?.addresses));
  }
  if (a.addresses?.apiServer) out.push(apiServerAddressesCheck(a.addresses.apiServer));
  if (a.addresses?.podRanges) {
    out.push(podRangesCheck(a.addresses.podRanges, a.addresses.outsidePodRanges ?? []));
  }
  if (a.addresses?.hostAddressSource) {
    out.push(hostAddressSourceCheck(a.addresses.hostAddressSource));
  }
  if (!isError(s.counters)) {
    const c = s.counters;
    const seen = (c.connect4Seen ?? 0n) + (c.connect6Seen ?? 0n);
    const tagged = (c.connect4Tagged ?? 0n) + (c.connect6Tagged ?? 0n);
    const failed = c.setsockoptFailed ?? 0n;
    out.push(check(
      "tagged-connects",
      failed === 0n && (seen > 0n || isError(s.mapEntries) || s.mapEntries === 0),
      `${tagged} of ${seen} connects from the kubelet cgroup tagged` +
        (failed > 0n ? `, ${failed} setsockopt failures` : ""),
      failed > 0n
        ? "the kernel refused SO_MARK: check the kernel log and that the program is current"
        : "no connect seen from the kubelet cgroup: the kubelet does not run in it (see above)",
      "warning",
    ));
  }
  return out;
}

/** The kubelet's default probe period (periodSeconds), in seconds. */
export const DEFAULT_PROBE_PERIOD_S = 10;
/** A target not connected to within this many of its probe periods is flagged. */
export const STALE_PERIODS = 3;

/** How one target reads for the on-call: "10.0.0.1:80 (ns/a, readiness)". */
function targetLabel(t: TargetView): string {
  const key = keyId({ family: t.family, address: t.address, port: t.port });
  return t.pod ? `${key} (${t.pod}${t.probe ? `, ${t.probe}` : ""})` : key;
}

/**
 * Targets the kubelet has not connected to within STALE_PERIODS of their
 * probe's period: its probe goes elsewhere (another address or port), or the
 * kubelet stopped probing. Targets never connected to are listed apart (a pod
 * that just started, or a probe that never reaches Lace). Lifecycle hooks'
 * targets are not judged: the kubelet connects to them once, at the
 * container's start (postStart) or stop (preStop), so silence is their norm.
 */
export function staleTargetsCheck(all: TargetView[]): Check {
  const stale: string[] = [];
  const never: string[] = [];
  const targets = all.filter((t) => !isHookKind(t.probe));
  for (const t of targets) {
    if (t.hits === undefined) continue; // an agent without hits: nothing to judge
    const limit = STALE_PERIODS * (t.periodSeconds ?? DEFAULT_PROBE_PERIOD_S);
    if (t.lastHitAgeSeconds === null || t.lastHitAgeSeconds === undefined) {
      never.push(targetLabel(t));
    } else if (t.lastHitAgeSeconds > limit) {
      stale.push(
        `${targetLabel(t)} last ${Math.floor(t.lastHitAgeSeconds)} s ago (period ${
          t.periodSeconds ?? DEFAULT_PROBE_PERIOD_S
        } s)`,
      );
    }
  }
  const show = (list: string[]) =>
    list.slice(0, 10).join("; ") + (list.length > 10 ? `; and ${list.length - 10} more` : "");
  const parts = [
    ...(stale.length
      ? [`not connected to within ${STALE_PERIODS} probe periods: ${show(stale)}`]
      : []),
    ...(never.length ? [`never connected to: ${show(never)}`] : []),
  ];
  return check(
    "target-hits",
    parts.length === 0,
    parts.length === 0
      ? `the kubelet connected to each of the ${targets.length} targets within ${STALE_PERIODS} probe periods`
      : `kubelet connects by target: ${parts.join("; ")}`,
    "a pod that just started has no hit yet; otherwise the kubelet probes another address or " +
      "port than the target (see unmatched-connects, `lace doctor pod NAMESPACE/NAME`) or no " +
      "longer probes it",
    "warning",
  );
}

/** Recent kubelet connects into Lace pod ranges that matched no target. */
export function unmatchedCheck(recent: UnmatchedView[]): Check {
  const lines = recent.slice(0, 10).map((u) =>
    `${keyId(u)}${u.pod ? ` (pod ${u.pod})` : ""}, ${u.reports} report${
      u.reports === 1 ? "" : "s"
    }, last ${new Date(u.lastSeen).toISOString()}`
  );
  return check(
    "unmatched-connects",
    recent.length === 0,
    recent.length === 0
      ? "no recent kubelet connect into a Lace pod range missed its target"
      : `recent kubelet connects into Lace pod ranges that matched no target (the probe cannot ` +
        `reach the pod): ${lines.join("; ")}` +
        (recent.length > 10 ? `; and ${recent.length - 10} more` : ""),
    "compare the port with the pod's probes (`lace doctor pod NAMESPACE/NAME`): a port the " +
      "rules skipped (the pod's ProbeIgnored Event) or an address from a stale pod status",
    "warning",
  );
}

/**
 * Addresses that pods of several networks hold on this node. Under
 * `exclusive` each is a clash the agent contains (the later pods get no
 * targets there); under `shared` each is an exposure the operator chose: a
 * pod there can redirect the kubelet's probes into another network.
 */
export function addressSharingCheck(view: AddressesView): Check {
  // A pod's network is named by its author: quoted, so no name closes the parenthesis or the list.
  const network = (n: string) => n === "" ? "default network" : networkLabel(n);
  const lines = view.addresses.slice(0, 10).map((a) =>
    `${a.address} held by ${a.holder} (${network(a.holderNetwork)}), later ${
      a.later.map((l) => `${l.pod} (${network(l.network)})`).join(", ")
    }` + (a.holderWithdrawn ? "; the holder's probes there are untagged too" : "")
  );
  const more = view.addresses.length > 10 ? `; and ${view.addresses.length - 10} more` : "";
  if (view.sharing === "shared") {
    return check(
      "address-sharing",
      false,
      `address sharing is on (--address-sharing=shared): ${view.addresses.length} address(es) ` +
        `held by pods of several networks on this node; a pod at one can answer the kubelet's ` +
        `probe with a redirect to another network's pod there, and the kubelet follows it into ` +
        `that network with policy skipped` + (lines.length ? `: ${lines.join("; ")}${more}` : ""),
      "keep it only for networks that trust each other; otherwise run the agent with " +
        "--address-sharing=exclusive (chart: node.addressSharing) and give each network " +
        "node-local addresses unique on the node",
      "warning",
    );
  }
  return check(
    "address-sharing",
    view.addresses.length === 0,
    view.addresses.length === 0
      ? "each address on this node belongs to one network (--address-sharing=exclusive)"
      : `addresses held by pods of several networks (later pods' probes there are not tagged, ` +
        `Event AddressClash): ${lines.join("; ")}${more}`,
    "the networks' address managers gave one address to two networks on this node: make their " +
      "node-local ranges disjoint, then recreate the later pods",
    "warning",
  );
}

/**
 * Where the agent reads the node's own addresses: the kubelet's network namespace, through a
 * process of its cgroup. Failing that it holds the last set read there and its own namespace's
 * addresses (closed, but an address the node gained since may be missed); an agent in another
 * namespace than the kubelet is named too.
 */
export function hostAddressSourceCheck(s: NonNullable<AddressesView["hostAddressSource"]>): Check {
  const other = s.otherNetns
    ? `; the agent runs in another network namespace than the kubelet (process ${s.pid})`
    : "";
  const ok = s.source === "kubelet-netns" && !s.otherNetns;
  return check(
    "host-address-source",
    ok,
    s.source === "kubelet-netns"
      ? `the node's own addresses are read from the kubelet's network namespace (process ${s.pid})${other}`
      : `${
        s.error ?? "the kubelet's network namespace cannot be read"
      }: holding the last addresses ` +
        `read there and the agent's own${other}`,
    s.source === "kubelet-netns"
      ? "run the agent on the host network (the chart's hostNetwork: true)"
      : "check --kubelet-cgroup and that the agent sees the host's /proc (hostPID: true)",
    "warning",
  );
}

/**
 * Pods at one of the node's own addresses or the API server's (`apiServer`): the kubelet probes
 * the node's host-network pods at the former and connects to the latter itself, and cannot tell
 * those connections from the pod's probes, so the agent tags none of them there (Event
 * ProbeIgnored, reason host-address) and refuses such an ADD; a pod there means a network's
 * address manager hands out such addresses, or a pod named one for itself.
 */
export function hostAddressesCheck(
  held: NonNullable<AddressesView["hostHeld"]>,
  apiServer: readonly string[] = [],
): Check {
  const api = new Set(apiServer);
  const lines = held.slice(0, 10).map((h) =>
    `${h.pod} at ${h.address}${api.has(h.address) ? " (the API server's)" : ""}`
  );
  const more = held.length > 10 ? `; and ${held.length - 10} more` : "";
  return check(
    "host-addresses",
    held.length === 0,
    held.length === 0
      ? "no pod holds one of the node's own addresses or the API server's"
      : `pods at one of the node's own addresses or the API server's, where the kubelet connects ` +
        `itself (their probes there are not tagged): ${lines.join("; ")}${more}`,
    "give the networks' address managers ranges that exclude the node's and the API server's " +
      "addresses (a Multus static IP too), then recreate these pods",
  );
}

/**
 * The API server's addresses the host holds and where they come from: a source whose last read
 * failed keeps the addresses it gave last (a warning naming it and why), and one never read gave
 * none, so an API server address only it names is open to a pod. None at all (an agent without
 * the API whose kubelet names only loopback) is not a failure.
 */
export function apiServerAddressesCheck(v: NonNullable<AddressesView["apiServer"]>): Check {
  const failing = v.sources.filter((s) => s.error !== undefined);
  const addresses = v.addresses.length ? v.addresses.join(", ") : "none";
  return check(
    "api-server-addresses",
    failing.length === 0,
    failing.length === 0
      ? `the API server's addresses held by the host: ${addresses} (from ` +
        `${v.sources.map((s) => s.name).join(", ")})`
      : `the API server's addresses held by the host: ${addresses}; ` +
        failing.map((s) => `${s.name} ${s.neverRead ? "never read" : "not read again"}: ${s.error}`)
          .join("; "),
    "check the agent's access to the API server and the chart's Roles <release>-api-server in " +
      "namespace default (get the service kubernetes, list endpointslices) and kube-public (get " +
      "configmap cluster-info), and that it sees the kubelet's /proc",
    "warning",
  );
}

/**
 * Whether pods' addresses are held to the operator's pod ranges (--pod-cidrs): without them a
 * pod given an address the kubelet itself connects to (the API server, a registry; a Multus
 * static IP) gets targets there, and the kubelet's connections to it are tagged into the pod's
 * network (a warning); with them, a pod outside every range gets no targets there (an error
 * naming it: its address manager hands out addresses outside the ranges, or it named one).
 */
export function podRangesCheck(
  ranges: readonly string[],
  outside: NonNullable<AddressesView["outsidePodRanges"]>,
): Check {
  if (ranges.length === 0) {
    return check(
      "pod-ranges",
      false,
      "no pod ranges (--pod-cidrs): a pod at an address the kubelet itself connects to (a " +
        "registry, an API server address none of the agent's sources names; the ones they name " +
        "are held, see api-server-addresses) would have the kubelet's connections there tagged " +
        "into its network",
      "set --pod-cidrs (chart: node.podCIDRs) to every Lace network's pod ranges",
      "warning",
    );
  }
  const lines = outside.slice(0, 10).map((h) => `${h.pod} at ${h.address}`);
  const more = outside.length > 10 ? `; and ${outside.length - 10} more` : "";
  return check(
    "pod-ranges",
    outside.length === 0,
    outside.length === 0
      ? `every pod address is inside the pod ranges (${ranges.join(", ")})`
      : `pods at addresses outside every pod range (${ranges.join(", ")}; their probes there ` +
        `are not tagged): ${lines.join("; ")}${more}`,
    "give the networks' address managers addresses inside the pod ranges only (a Multus static " +
      "IP too), or add the missing range to --pod-cidrs, then recreate these pods",
  );
}
