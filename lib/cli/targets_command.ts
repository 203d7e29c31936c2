/**
 * `lace targets`: what the kubelet's connects are matched against. Asks the
 * running agent first, over its root-only local socket (it knows which pod
 * each target belongs to), and falls back to reading the pinned map when no
 * agent answers.
 */
import type { AddressesView, TargetView } from "../agent/http_server.ts";
import { getFromAgent } from "../agent/local_client.ts";
import { registeredTargets } from "../agent/registered_targets.ts";
import { defaultConfig } from "../config.ts";
import { boolean, type CommandSpec } from "./flags.ts";
import { nodeFlags, parseNodeCommand } from "./agent_flags.ts";
import { lastHitText, servesText } from "../text/targets.ts";
import { safeJson, safeTable, safeText } from "../text/safe.ts";
import { networkLabel } from "../probe/network_name.ts";

interface TargetsOptions {
  json: boolean;
  pinPath: string;
  agentSocket: string;
}

const spec: CommandSpec<TargetsOptions> = {
  name: "targets",
  summary:
    "List the registered probe targets: family, address, port, network, mark, pod, the probe or lifecycle hook each serves, and the kubelet connects each tagged (hits, last hit).",
  usage: "lace targets [--json] [--pin-path DIR] [--agent-socket PATH]",
  flags: [
    { name: "json", key: "json", value: boolean, env: ["LACE_JSON"], help: "Print a JSON array" },
    nodeFlags.pinPath,
    nodeFlags.agentSocket,
  ],
  defaults: () => {
    const { pinPath, agentSocket } = defaultConfig();
    return { json: false, pinPath, agentSocket };
  },
};

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

/** The agent's /addresses; undefined when no agent answers (or an older one without it). */
async function addressesFromAgent(socketPath: string): Promise<AddressesView | undefined> {
  if (!socketPath) return undefined;
  try {
    const res = await getFromAgent(socketPath, "/addresses", 1000);
    return res.status === 200 ? JSON.parse(res.body) as AddressesView : undefined;
  } catch {
    return undefined;
  }
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

export async function runTargetsCommand(args: string[]): Promise<number> {
  const options = parseNodeCommand(spec, args);
  if (options === null) return 0;
  const targets = await registeredTargets(options.agentSocket, options.pinPath);
  if (options.json) {
    console.log(targetsJson(targets));
  } else {
    console.log(targets.length ? targetsTable(targets) : "No probe targets registered");
    const addresses = await addressesFromAgent(options.agentSocket);
    const text = addresses ? addressesText(addresses) : "";
    if (text) console.log(`\n${text}`);
  }
  return 0;
}
