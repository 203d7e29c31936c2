/**
 * One run at a time per namespace: a Lease held by the run and renewed in the
 * background. A live lease of another run stops this one with a message
 * naming it; an expired one (a crashed run) is taken over.
 */
import { ConflictError, type LeaseRecord, type NetcheckCluster } from "./netcheck_cluster.ts";
import { SetupError } from "./errors.ts";
import { realTimers, sleep, type Timers } from "../../time/timers.ts";

export const LEASE_NAME = "lace-netcheck";

/** The Lease is held, unexpired, by another run. */
export class LeaseHeldError extends SetupError {
  override name = "LeaseHeldError";
  constructor(message: string, readonly holder: string, readonly expiresAt: number) {
    super(message);
  }
}

/** A held lease; release() is idempotent. */
export interface LeaseLock {
  /** The run whose expired lease was taken over, if any. */
  tookOverFrom?: string;
  /** The holder that took the lease from this run (a renewal found it), if one did. */
  readonly lost: string | undefined;
  release(): Promise<void>;
}

/** The clocks a Lease is held with. */
export interface LeaseClock {
  /** Runs the renewals (fake time in tests). */
  timers?: Timers;
  /** Stamps renewals and judges another run's expiry: wall time, as every runner reads it. */
  wallClock?: () => number;
}

/** Takes the lease for `holder`, or throws a SetupError naming the run that holds it. */
export async function acquireLease(
  cluster: NetcheckCluster,
  namespace: string,
  holder: string,
  durationS: number,
  clock: LeaseClock = {},
): Promise<LeaseLock> {
  const now = clock.wallClock ?? Date.now;
  const timers = clock.timers ?? realTimers;
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
    if (existing === null) return acquireLease(cluster, namespace, holder, durationS, clock);
    const expiresAt = existing.renewTime + existing.durationS * 1000;
    if (existing.holder && existing.holder !== holder && expiresAt > now()) {
      throw new LeaseHeldError(
        `Another netcheck run "${existing.holder}" holds Lease "${namespace}/${LEASE_NAME}" ` +
          `(until ${new Date(expiresAt).toISOString()}); wait for it to finish`,
        existing.holder,
        expiresAt,
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
  // Every third of the duration, whether the last renewal has answered or not.
  const periodMs = (durationS * 1000) / 3;
  const tick = () => {
    timer = timers.setTimeout(tick, periodMs);
    renew();
  };
  let timer = timers.setTimeout(tick, periodMs);
  return {
    tookOverFrom,
    get lost() {
      return lost;
    },
    async release() {
      if (released) return;
      released = true;
      timers.clearTimeout(timer);
      const latest = await cluster.getLease(namespace, LEASE_NAME).catch(() => null);
      if (latest?.holder === holder) await cluster.deleteLease(namespace, LEASE_NAME);
    },
  };
}

/** How waitForLease waits and says that it does. */
export interface StandbyOptions extends LeaseClock {
  /** Ends the wait early (without error). */
  signal?: AbortSignal;
  /** Gets a line when another run is found holding the Lease, once per holder. */
  write?: (line: string) => void;
}

/**
 * acquireLease for a runner that stands by (`--watch`, e.g. a second replica of the chart's
 * Deployment): while another run holds the Lease it retries every third of the Lease's duration,
 * creating nothing and running no round, and takes over once that run releases it or stops
 * renewing it. Returns undefined when `signal` aborts first.
 */
export async function waitForLease(
  cluster: NetcheckCluster,
  namespace: string,
  holder: string,
  durationS: number,
  standby: StandbyOptions,
): Promise<LeaseLock | undefined> {
  let announced = "";
  while (!standby.signal?.aborted) {
    try {
      return await acquireLease(cluster, namespace, holder, durationS, standby);
    } catch (e) {
      if (!(e instanceof LeaseHeldError)) throw e;
      if (e.holder !== announced) {
        standby.write?.(
          `Standing by: ${e.message.replace(/; wait for it to finish$/, "")}; taking over ` +
            "when it is released or expires\n",
        );
      }
      announced = e.holder;
    }
    await sleep(standby.timers ?? realTimers, (durationS * 1000) / 3, standby.signal);
  }
  return undefined;
}
