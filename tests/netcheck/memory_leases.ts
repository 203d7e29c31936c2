/**
 * The Lease part of NetcheckCluster kept in memory, with the API server's
 * optimistic concurrency (a stale resourceVersion is a conflict). Both
 * simulated clusters hold their run lock this way; tests read `leases`.
 */
import { ConflictError, type LeaseRecord } from "../../lib/netcheck/cluster/netcheck_cluster.ts";

export class MemoryLeases {
  /** The stored leases by name. */
  readonly leases = new Map<string, LeaseRecord>();
  #rv = 0;

  getLease(_namespace: string, name: string): Promise<LeaseRecord | null> {
    return Promise.resolve(this.leases.get(name) ?? null);
  }

  createLease(_namespace: string, lease: LeaseRecord): Promise<LeaseRecord> {
    if (this.leases.has(lease.name)) return Promise.reject(new ConflictError("exists"));
    return Promise.resolve(this.#store(lease));
  }

  updateLease(_namespace: string, lease: LeaseRecord): Promise<LeaseRecord> {
    const current = this.leases.get(lease.name);
    if (!current || current.resourceVersion !== lease.resourceVersion) {
      return Promise.reject(new ConflictError("stale"));
    }
    return Promise.resolve(this.#store(lease));
  }

  deleteLease(_namespace: string, name: string): Promise<void> {
    this.leases.delete(name);
    return Promise.resolve();
  }

  #store(lease: LeaseRecord): LeaseRecord {
    const stored = { ...lease, resourceVersion: String(++this.#rv) };
    this.leases.set(lease.name, stored);
    return stored;
  }
}
