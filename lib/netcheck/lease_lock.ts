/**
 * One run at a time per namespace: a Lease held by the run and renewed in the
 * background. A live lease of another run stops this one with a message
 * naming it; an expired one (a crashed run) is taken over.
 */
import { ConflictError, type LeaseRecord, type NetcheckCluster } from "./cluster.ts";
import { SetupError } from "./readiness.ts";

export const LEASE_NAME = "lace-netcheck";

/** A held lease; release() is idempotent. */
export interface LeaseLock {
  /** The run whose expired lease was taken over, if any. */
  tookOverFrom?: string;
  /** The holder that took the lease from this run (a renewal found it), if one did. */
  readonly lost: string | undefined;
  release(): Promise<void>;
}

/** Takes the lease for `holder`, or throws a SetupError naming the run that holds it. */
export async function acquireLease(
  cluster: NetcheckCluster,
  namespace: string,
  holder: string,
  durationS: number,
  now: () => number = Date.now,
): Promise<LeaseLock> {
  const fresh: LeaseRecord = {
    name: LEASE_NAME,
    holder,
    durationS,
    renewTime: now(),
    resourceVersion: "",
  };
  let current: LeaseRecord;
  let tookOverFrom: string | undefined;
  try {
    current = await cluster.createLease(namespace, fresh);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    const existing = await cluster.getLease(namespace, LEASE_NAME);
    if (existing === null) return acquireLease(cluster, namespace, holder, durationS, now);
    const expiresAt = existing.renewTime + existing.durationS * 1000;
    if (existing.holder && existing.holder !== holder && expiresAt > now()) {
      throw new SetupError(
        `Another netcheck run "${existing.holder}" holds Lease "${namespace}/${LEASE_NAME}" ` +
          `(until ${new Date(expiresAt).toISOString()}); wait for it to finish`,
      );
    }
    tookOverFrom = existing.holder || undefined;
    try {
      current = await cluster.updateLease(namespace, {
        ...fresh,
        resourceVersion: existing.resourceVersion,
      });
    } catch (e2) {
      if (e2 instanceof ConflictError) {
        throw new SetupError(
          `Another netcheck run took Lease "${namespace}/${LEASE_NAME}" at the same moment; ` +
            `wait for it to finish`,
        );
      }
      throw e2;
    }
  }
  let released = false;
  let lost: string | undefined;
  const renew = async () => {
    if (lost) return;
    try {
      current = await cluster.updateLease(namespace, { ...current, renewTime: now() });
    } catch (e) {
      // A missed renewal is retried at the next tick; the lease lasts three of them. A
      // conflict may mean another runner took it over (this one was partitioned away).
      if (!(e instanceof ConflictError)) return;
      const latest = await cluster.getLease(namespace, LEASE_NAME).catch(() => null);
      if (latest && latest.holder !== holder) lost = latest.holder || "(no holder)";
      else if (latest) current = latest;
    }
  };
  const timer = setInterval(renew, (durationS * 1000) / 3);
  Deno.unrefTimer(timer);
  return {
    tookOverFrom,
    get lost() {
      return lost;
    },
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      const latest = await cluster.getLease(namespace, LEASE_NAME).catch(() => null);
      if (latest?.holder === holder) await cluster.deleteLease(namespace, LEASE_NAME);
    },
  };
}
