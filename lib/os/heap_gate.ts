/**
 * A full garbage collection whenever the V8 heap has grown by a step since
 * the last one this gate made. For work that makes much garbage in a burst:
 * the API source's list pages and watch events, each a whole pod object of up
 * to 1.5 MB that is garbage once trimmed. V8 otherwise lets such garbage pile
 * up to hundreds of MiB before it collects, past the chart's memory limit.
 * gc() is there with Lace's V8 flags (lib/os/v8_flags.ts); without it the gate
 * does nothing.
 */

export interface HeapGateOptions {
  /**
   * How much the heap may grow between two collections, in bytes (default 16 MiB: a smaller
   * step lowers the peak RSS while hostile pods are listed, tests/agent_memory_test.ts).
   */
  stepBytes?: number;
  /** The heap in use now, in bytes (Deno.memoryUsage().heapUsed by default: cheap per event). */
  heapUsed?: () => number;
  /** A full collection (V8's gc() when exposed, by default). */
  gc?: () => void;
}

export class HeapGate {
  readonly #step: number;
  readonly #heapUsed: () => number;
  readonly #gc?: () => void;
  #base: number;

  constructor(options: HeapGateOptions = {}) {
    this.#step = options.stepBytes ?? 16 * 1024 * 1024;
    this.#heapUsed = options.heapUsed ?? (() => Deno.memoryUsage().heapUsed);
    this.#gc = options.gc ?? (globalThis as { gc?: () => void }).gc;
    this.#base = this.#gc ? this.#heapUsed() : 0;
  }

  /** Call after each burst of garbage: collects when the heap grew by a step. True when it did. */
  check(): boolean {
    if (!this.#gc) return false;
    if (this.#heapUsed() - this.#base < this.#step) return false;
    this.#gc();
    this.#base = this.#heapUsed();
    return true;
  }
}
