/**
 * The agent's answers as the operator reads them: the target table and JSON of `lace targets`,
 * the lines about addresses pods of several networks hold, and how a target's probe and last hit
 * are named (one wording for `lace targets` and `lace doctor pod`). Every value a pod author
 * chose is escaped (text/safe.ts).
 */
import { formatDuration } from "../time/duration.ts";
import { safeJson, safeTable, safeText } from "../text/safe.ts";
import { networkLabel } from "../probe/network_name.ts";
import type { AddressesView, TargetView } from "./views.ts";

/**
 * "app/readiness", "proxy/preStop": the container and the probe or lifecycle
 * hook the target serves, as in the pod's spec. A key a probe and a hook of
 * one pod share is one target, named by the first in spec order (a
 * container's probes before its hooks); "-" when unknown (read from the
 * pinned map, which knows no pods).
 */
export function servesText(t: { container?: string; probe?: string }): string {
  if (!t.probe) return "-";
  return t.container ? `${t.container}/${t.probe}` : t.probe;
}

/** "12s ago", "1h2m ago"; "never" when the kubelet never connected; "-" when unknown. */
export function lastHitText(ageSeconds: number | null | undefined): string {
  if (ageSeconds === undefined) return "-";
  if (ageSeconds === null) return "never";
  return `${formatDuration(Math.floor(ageSeconds) * 1000)} ago`;
}

/**
 * Renders targets as an aligned table, sorted for stable output. SERVES is
 * the container and probe or lifecycle hook the target is for (servesText). Every cell is
 * escaped (text/safe.ts): pods, containers and networks are named by pod authors.
 */
export function targetsTable(targets: TargetView[]): string {
  const rows = [...targets].sort((a, b) =>
    a.family.localeCompare(b.family) || a.address.localeCompare(b.address) || a.port - b.port
  ).map((t) => [
    t.family,
    t.address,
    String(t.port),
    t.network ? `${t.network} (${t.networkId})` : String(t.networkId),
    `0x${t.mark.toString(16)}`,
    t.pod ?? "-",
    servesText(t),
    t.hits === undefined ? "-" : String(t.hits),
    lastHitText(t.lastHitAgeSeconds),
  ]);
  const header = [
    "FAMILY",
    "ADDRESS",
    "PORT",
    "NETWORK",
    "MARK",
    "POD",
    "SERVES",
    "HITS",
    "LAST HIT",
  ];
  return safeTable(header, rows);
}

/**
 * `lace targets --json`: the values exact, their control and bidi characters as JSON escapes
 * (text/safe.ts).
 */
export function targetsJson(targets: TargetView[]): string {
  return safeJson(targets.map((t) => ({
    family: t.family,
    address: t.address,
    port: t.port,
    networkId: t.networkId,
    mark: t.mark,
    ...(t.pod ? { pod: t.pod } : {}),
    ...(t.probe ? { container: t.container, probe: t.probe, handler: t.handler } : {}),
    ...(t.hits === undefined ? {} : { hits: t.hits, lastHitAgeSeconds: t.lastHitAgeSeconds }),
  })));
}

/**
 * The lines under the table about addresses pods of several networks hold:
 * under exclusive whose probes there are not tagged, under shared that the
 * address is shared. Empty when there are none. Escaped like the table.
 */
export function addressesText(view: AddressesView): string {
  // A pod's network is named by its author: quoted, so no name closes the parenthesis or the list.
  const net = (n: string) => n === "" ? "default network" : networkLabel(n);
  const lines = view.addresses.map((a) => {
    const later = a.later.map((l) => `${l.pod} (${net(l.network)})`).join(", ");
    const holder = `${a.holder} (${net(a.holderNetwork)})`;
    if (view.sharing === "shared") return `  ${a.address}: ${holder}, ${later}`;
    return `  ${a.address}: held by ${holder}; not tagged there: ${later}` +
      (a.holderWithdrawn ? `, and the holder` : "");
  }).map(safeText);
  if (lines.length === 0) return "";
  const title = view.sharing === "shared"
    ? "Addresses shared by pods of several networks (--address-sharing=shared):"
    : "Addresses held by pods of several networks (--address-sharing=exclusive):";
  return [title, ...lines].join("\n");
}
