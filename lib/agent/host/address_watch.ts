/**
 * Notices within seconds that the node's own addresses changed, so a pod already learnt at an
 * address the node gains loses its targets there (and one at an address the node dropped gets
 * them back) without waiting for the periodic resync (5 min by default). The set is read again
 * every `intervalMs` and compared with the set the last reconcile held; polling rather than a
 * netlink subscription, which would have to follow the kubelet's namespace and be kept alive.
 * Every 5 s, not every second: a read of the kubelet's namespace is cheap, but each is a wake-up
 * of the agent's thread, and bench figure 4's goal allows an idle agent at most one wake-up a
 * second more than a 1 Hz timer.
 */
import { getLogger } from "@logtape/logtape";
import type { Timers } from "../../time/timers.ts";
import { errorText } from "../../text/error.ts";

const log = getLogger(["lace", "agent", "host-addresses"]);

/** How often the node's own addresses are read between reconciles. */
export const HOST_ADDRESS_CHECK_MS = 5000;

export interface HostAddressWatchOptions {
  /** Reads the node's own addresses (KubeletNetnsAddresses.read() in the agent). */
  read: () => ReadonlySet<string>;
  /** The set the last reconcile held for the host; undefined before the first one. */
  held: () => ReadonlySet<string> | undefined;
  /** The set differs from the one held: reconcile with `set`. */
  changed: (set: ReadonlySet<string>) => void;
  timers: Timers;
  /** Default HOST_ADDRESS_CHECK_MS. */
  intervalMs?: number;
}

/** Reads the node's own addresses on a timer; see the module comment. */
export class HostAddressWatch {
  readonly #o: HostAddressWatchOptions;
  #timer: unknown = undefined;
  #stopped = true;

  constructor(o: HostAddressWatchOptions) {
    this.#o = o;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** One check: reads the set and reports it when it differs from the one held. */
  check(): void {
    const held = this.#o.held();
    // Before the first reconcile there is nothing to compare with: that reconcile reads them.
    if (held === undefined) return;
    let now: ReadonlySet<string>;
    try {
      now = this.#o.read();
    } catch (e) {
      // The reader fails closed by itself; a throw here is a bug, and must not stop the timer.
      log.error("Reading the node's own addresses failed: {error}", { error: errorText(e) });
      return;
    }
    const gained = [...now.difference(held)].sort();
    const lost = [...held.difference(now)].sort();
    if (gained.length === 0 && lost.length === 0) return;
    log.info(
      "The addresses the host holds (the node's own, the API server's) changed (gained {gained}, lost {lost}): reconciling, so no pod keeps targets at one",
      { gained, lost },
    );
    this.#o.changed(now);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#timer = undefined;
      this.check();
      this.#schedule();
    }, this.#o.intervalMs ?? HOST_ADDRESS_CHECK_MS);
  }
}
