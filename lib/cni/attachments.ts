import { type AttachmentRef, refKey } from "./protocol.ts";

/**
 * Which sandbox (container id) and interface registered which pod uid. A pod
 * whose sandbox was recreated has a new ADD before the old sandbox's late DEL
 * or GC, and that old DEL must not take the new sandbox's targets away; a pod
 * with several interfaces (Multus) has one entry per interface, and a DEL of
 * one is a DEL of that interface only.
 */
export class Attachments {
  readonly #uidByRef = new Map<string, { uid: string; ref: AttachmentRef }>();
  /** The sandbox (container id) that attached each pod last. */
  readonly #sandboxByUid = new Map<string, string>();

  add(ref: AttachmentRef, uid: string): void {
    const previous = this.#sandboxByUid.get(uid);
    if (previous !== undefined && previous !== ref.containerId) {
      // A new sandbox: the old one's interfaces are no longer this pod's.
      for (const [key, owner] of [...this.#uidByRef]) {
        if (owner.uid === uid && owner.ref.containerId === previous) this.#uidByRef.delete(key);
      }
    }
    this.#uidByRef.set(refKey(ref), { uid, ref });
    this.#sandboxByUid.set(uid, ref.containerId);
  }

  /** The uid a DEL of `ref` should remove, or null when a newer sandbox holds it. */
  uidToRemove(ref: AttachmentRef, uid: string | undefined): string | null {
    const owner = uid ?? this.#uidByRef.get(refKey(ref))?.uid;
    if (!owner) return null;
    const current = this.#sandboxByUid.get(owner);
    return current === undefined || current === ref.containerId ? owner : null;
  }

  delete(ref: AttachmentRef): void {
    this.#deleteKey(refKey(ref));
  }

  #deleteKey(key: string): void {
    const owner = this.#uidByRef.get(key);
    this.#uidByRef.delete(key);
    if (owner === undefined) return;
    const left = [...this.#uidByRef.values()].some((o) => o.uid === owner.uid);
    if (!left && this.#sandboxByUid.get(owner.uid) === owner.ref.containerId) {
      this.#sandboxByUid.delete(owner.uid);
    }
  }

  /**
   * Forgets every attachment not in `valid` (CNI GC); returns the interfaces
   * to remove, those of each pod's current sandbox.
   */
  collect(valid: AttachmentRef[]): { uid: string; ref: AttachmentRef }[] {
    const keep = new Set(valid.map(refKey));
    const gone: { uid: string; ref: AttachmentRef }[] = [];
    for (const [key, owner] of [...this.#uidByRef]) {
      if (keep.has(key)) continue;
      const current = this.#sandboxByUid.get(owner.uid) === owner.ref.containerId;
      this.#deleteKey(key);
      if (current) gone.push(owner);
    }
    return gone;
  }

  get size(): number {
    return this.#uidByRef.size;
  }
}
