/**
 * A stand-in kubelet for upgrade tests: connects to one probe target from the
 * kubelet cgroup every few milliseconds, for as long as an upgrade takes, and
 * counts every connect that did not carry the target's mark.
 */
import type { Prober } from "../../lib/doctor/prober.ts";
import { waitFor } from "./wait.ts";

export interface KubeletTally {
  connects: number;
  /** Connects whose socket did not carry the expected mark. */
  untagged: number;
  /** The first few untagged results, for the failure message. */
  samples: string[];
}

export class StandInKubelet implements AsyncDisposable {
  readonly tally: KubeletTally = { connects: 0, untagged: 0, samples: [] };
  #running = true;
  #error: unknown;
  readonly #done: Promise<void>;

  /** Starts connecting at once through `prober` (which runs in the kubelet cgroup). */
  constructor(prober: Prober, target: { host: string; port: number; mark: number }) {
    this.#done = (async () => {
      while (this.#running) {
        const r = await prober.probe({ ...target, timeoutMs: 1000, connectOnly: true });
        this.tally.connects++;
        if (r.mark !== target.mark || r.result !== "reached") {
          this.tally.untagged++;
          if (this.tally.samples.length < 5) this.tally.samples.push(JSON.stringify(r));
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
