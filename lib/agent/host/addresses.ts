/**
 * The node's own addresses, which no pod may hold: the kubelet probes
 * hostNetwork pods (system daemons, Lace's own agent) at the node's address,
 * and it cannot tell such a probe from one of a Lace pod at the same address
 * and port. A pod whose address is one of them would have the kubelet's
 * probes of the system pods there tagged into its network (its author then
 * decides whether a system daemon is healthy). So the host holds them
 * against every network, under both sharing modes, with the API server's
 * (api_server_addresses.ts), which the kubelet connects to itself.
 *
 * Read from the node, not from the API's Node object: from the kubelet's network namespace
 * (kubelet_netns_addresses.ts; readHostAddresses() here is the agent's own namespace's, its
 * fallback), where the addresses the kernel delivers locally are the truth; the Node's status
 * lists only some of them, and a stale or absent Node object must not open the hole. They are
 * asked for at every reconcile and every CNI ADD, so an address the node gains counts at the
 * next ADD after the reader's 1 s cache and, for pods already there, within the agent's 1 s
 * check (address_watch.ts): no netlink subscription to keep alive.
 */
import { canonicalAddress } from "../../net/address.ts";
import { specialAddressKind } from "../../rules/addresses.ts";

/**
 * The canonical addresses among `interfaces`' that could be a pod's (loopback, link-local and the
 * other special kinds never become targets anyway, rules/addresses.ts); unreadable ones are left
 * out.
 */
export function hostAddressSet(interfaces: readonly { address: string }[]): Set<string> {
  const out = new Set<string>();
  for (const { address } of interfaces) {
    try {
      // A zone ("fe80::1%eth0") only ever comes with link-local addresses, left out below.
      const { address: canonical } = canonicalAddress(address.split("%")[0]);
      if (specialAddressKind(canonical) === undefined) out.add(canonical);
    } catch { /* not an address Lace can target */ }
  }
  return out;
}

/**
 * The addresses on the interfaces of the agent's network namespace: the host's, where the agent
 * runs on the host network as the chart runs it.
 */
export function readHostAddresses(): Set<string> {
  return hostAddressSet(Deno.networkInterfaces());
}
