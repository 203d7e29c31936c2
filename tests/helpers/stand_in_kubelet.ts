/**
 * A stand-in kubelet for upgrade tests: connects to its probe targets in turn
 * (an IPv4 and an IPv6 one, as the connect4 and connect6 programs each tag
 * their own family) from the kubelet cgroup every few milliseconds, for as
 * long as an upgrade takes, and counts every connect that did not carry the
 * target's mark.
 */
import type { Prober } from "../../lib/prober/mod.ts";
import { waitFor } from "./wait.ts";

export interface KubeletTally {
  connects: number;
  /** Connects per target host. */
  perHost: Record<string, number>;
  /** Connects whose socket did not carry the expected mark. */
  untagged: number;
  /** The first few untagged results, for the failure message. */
  samples: string[];
}

export class StandInKubelet implements AsyncDisposable {
  readonly tally: KubeletTally = { connects: 0, perHost: {}, untagged: 0, samples: [] };
  #running = true;
  #error: unknown;
  readonly #done: Promise<void>;

  /** Starts connecting at once through `prober` (which runs in the kubelet cgroup). */
  constructor(
    prober: Prober,
    targets:
      | { host: string; port: number; mark: number }
      | { host: string; port: number; mark: number }[],
  ) {
    const list = Array.isArray(targets) ? targets : [targets];
    this.#done = (async () => {
      for (let i = 0; this.#running; i++) {
        const target = list[i % list.length];
        const r = await prober.probe({ ...target, timeoutMs: 1000, connectOnly: true });
        this.tally.connects++;
        this.tally.perHost[target.host] = (this.tally.perHost[target.host] ?? 0) + 1;
        if (r.mark !== target.mark || r.result !== "reached") {
          this.tally.untagged++;
          if (this.tally.samples.length < 5) {
            this.tally.samples.push(`${target.host}: ${JSON.stringify(r)}`);
          }
        }
        // Pacing, not synchronisation: a kubelet probes every few milliseconds here.
        await new Promise((r) => setTimeout(r, 2));
      }
    })().catch((e) => {
      // Kept for stop(): a rejection nobody awaits yet would fail the whole test file.
      this.#error = e;
    });
  }

  /** Waits until `n` more connects have been made (so a change is seen from the kubelet's side). */
  async connects(n: number): Promise<void> {
    const want = this.tally.connects + n;
    await waitFor(() => {
      if (this.#error) throw new Error("Stand-in kubelet failed", { cause: this.#error });
      return this.tally.connects >= want;
    }, { timeout: 10_000, message: `${n} more connects of the stand-in kubelet` });
  }

  /** Stops and returns the tally; throws when the prober failed while running. */
  async stop(): Promise<KubeletTally> {
    this.#running = false;
    await this.#done;
    if (this.#error) throw new Error("Stand-in kubelet failed", { cause: this.#error });
    return this.tally;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#running = false;
    await this.#done;
  }
}
