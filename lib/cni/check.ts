/**
 * CNI CHECK on the agent's side: does the probe map hold what this pod's
 * attachment needs? Pure comparison of the agent's desired targets with the
 * map's entries, and the glue that makes the agent (an `AttachmentAgent`) a `CniHandler`.
 */
import { canonicalAddress } from "../net/address.ts";
import { keyId, type ProbeEntry, type ProbeStore } from "../probe/key.ts";
import { networkLabel } from "../probe/network_name.ts";
import type { Attachment, AttachmentRef } from "./protocol.ts";
import type { CniHandler } from "./server.ts";

/** The part of a desired target CHECK looks at. */
export interface DesiredTarget {
  entry: ProbeEntry;
  network: string;
  pod: { uid: string };
}

function describe(entry: ProbeEntry): string {
  return `network id ${entry.value.networkId} mark 0x${entry.value.mark.toString(16)}`;
}

/**
 * Lists every mismatch between the pod's desired targets and the map: a
 * target missing from the map or holding another value, a target on an
 * address the attachment does not have, or in another network (name or id)
 * than the plugin configuration names (`otherInterfaces`: the addresses of the
 * pod's other interfaces, whose targets are the pod's too). An empty list means the attachment checks out
 * (also for a pod without probes: it needs no targets).
 */
export function checkAttachment(
  a: Attachment,
  desired: readonly DesiredTarget[],
  entries: ProbeEntry[],
  otherInterfaces: string[] = [],
): string[] {
  const inMap = new Map(entries.map((e) => [keyId(e.key), e]));
  // Targets on the addresses of the pod's other interfaces (Multus) are not stale.
  const ips = new Set([...a.ips, ...otherInterfaces].map((ip) => canonicalAddress(ip).address));
  const problems: string[] = [];
  for (const t of desired) {
    if (t.pod.uid !== a.uid) continue;
    const id = keyId(t.entry.key);
    const found = inMap.get(id);
    if (!found) {
      problems.push(`target ${id} is not in the probe map`);
    } else if (
      found.value.mark !== t.entry.value.mark || found.value.networkId !== t.entry.value.networkId
    ) {
      problems.push(
        `target ${id} has ${describe(found)} in the probe map, expected ${describe(t.entry)}`,
      );
    }
    if (!ips.has(t.entry.key.address)) {
      problems.push(`target ${id} is on an address the attachment does not have`);
    }
    if (a.network !== undefined && t.network !== a.network) {
      problems.push(
        `target ${id} is in ${networkLabel(t.network)}, the plugin says ${
          JSON.stringify(a.network)
        }`,
      );
    }
    if (a.networkId !== undefined && t.entry.value.networkId !== a.networkId) {
      problems.push(
        `target ${id} is in network id ${t.entry.value.networkId}, the plugin says ${a.networkId}`,
      );
    }
  }
  return problems;
}

/**
 * What the CNI path needs of the agent, owned here so the agent core (lib/agent/core.ts, above
 * this folder) provides it rather than this folder reaching up for the core's type.
 */
export interface AttachmentAgent {
  /** Writes the attachment's targets; resolves once they are in the probe map. */
  registerAttachment(a: Attachment, ref?: AttachmentRef): Promise<void>;
  /** Forgets what CNI said about one interface of the pod. */
  removeAttachment(uid: string, ref?: AttachmentRef): Promise<void>;
  /** The targets the agent wants in the map now. */
  view(): { readonly targets: readonly DesiredTarget[] };
  /** The addresses of the pod's other interfaces, whose targets are the pod's too. */
  interfaceAddresses(uid: string): string[];
}

/**
 * The handler `startCniServer` needs, made of the agent (registration
 * and removal, which resolve once the map is written) and the probe store
 * CHECK reads: the map itself, never a copy, so drift shows.
 */
export function cniHandlerFor(core: AttachmentAgent, store: ProbeStore): CniHandler {
  return {
    registerAttachment: (a, ref) => core.registerAttachment(a, ref),
    removeAttachment: (uid, ref) => core.removeAttachment(uid, ref),
    check: (a) => {
      const problems = checkAttachment(
        a,
        core.view().targets,
        store.entries(),
        core.interfaceAddresses(a.uid),
      );
      return Promise.resolve({ problems });
    },
  };
}
