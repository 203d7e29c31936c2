/**
 * The addresses of each interface the CNI path attached, by pod uid then
 * `containerId/ifname` (Multus: several per pod). The pod's CNI view holds
 * all of them; a DEL of one interface takes only its own addresses, and a
 * new sandbox's ADD replaces the interfaces of the pod's older sandbox.
 * Pure bookkeeping, no I/O.
 */
import { type AttachmentRef, refKey } from "../../cni/protocol.ts";

export class PodInterfaces {
  readonly #byPod = new Map<string, Map<string, string[]>>();
  /** Each pod's addresses (addressesOf its interfaces), made when they change: read per reconcile. */
  readonly #addresses = new Map<string, readonly string[]>();

  /**
   * Records the addresses of one interface and returns every address the
   * pod's interfaces have now. Without `ref` (a caller that names no
   * interface) the pod's view is these addresses alone.
   */
  add(uid: string, ref: AttachmentRef | undefined, ips: string[]): string[] {
    if (!ref) {
      this.#byPod.delete(uid);
      this.#addresses.set(uid, [...ips]);
      return ips;
    }
    const ifaces = this.#byPod.get(uid) ?? new Map<string, string[]>();
    for (const key of [...ifaces.keys()]) {
      if (!key.startsWith(`${ref.containerId}/`)) ifaces.delete(key);
    }
    ifaces.set(refKey(ref), ips);
    this.#byPod.set(uid, ifaces);
    return this.#keep(uid, addressesOf(ifaces));
  }

  /**
   * Forgets one interface (`ref`) and returns the addresses the pod's other
   * interfaces still have; undefined when none is left (or no `ref`): the
   * whole pod is forgotten.
   */
  remove(uid: string, ref: AttachmentRef | undefined): string[] | undefined {
    const ifaces = this.#byPod.get(uid);
    if (ref && ifaces && ifaces.delete(refKey(ref)) && ifaces.size > 0) {
      return this.#keep(uid, addressesOf(ifaces));
    }
    this.#byPod.delete(uid);
    this.#addresses.delete(uid);
    return undefined;
  }

  /** Forgets every pod not in `uids` (deleted while no DEL came). */
  keepOnly(uids: ReadonlySet<string>): void {
    for (const uid of [...this.#byPod.keys()]) if (!uids.has(uid)) this.#byPod.delete(uid);
    for (const uid of [...this.#addresses.keys()]) if (!uids.has(uid)) this.#addresses.delete(uid);
  }

  /** Every address the CNI path attached the pod's interfaces with (one array until they change). */
  addresses(uid: string): readonly string[] {
    return this.#addresses.get(uid) ?? [];
  }

  #keep(uid: string, addresses: string[]): string[] {
    this.#addresses.set(uid, [...addresses]);
    return addresses;
  }
}

function addressesOf(ifaces: Map<string, string[]>): string[] {
  return [...new Set([...ifaces.values()].flat())];
}
