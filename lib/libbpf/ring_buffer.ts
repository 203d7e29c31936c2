/**
 * A BPF ring buffer read from the agent's own thread: libbpf's ring_buffer
 * with a Deno FFI callback, drained with ring_buffer__consume (never blocks)
 * on the caller's schedule, so no thread waits in the kernel.
 */
import { RING_BUFFER_SAMPLE_FN } from "./ffi.ts";
import { libbpfSymbols } from "./library.ts";
import type { BpfMap } from "./map.ts";
import { unwrap } from "./errors.ts";

export class RingBufferReader implements Disposable {
  #rb: Deno.PointerObject | null;
  readonly #callback: Deno.UnsafeCallback<typeof RING_BUFFER_SAMPLE_FN>;

  /** Reads `map` (a BPF_MAP_TYPE_RINGBUF); each record is copied and handed to `onRecord`. */
  constructor(map: BpfMap, onRecord: (record: Uint8Array) => void) {
    this.#callback = new Deno.UnsafeCallback(RING_BUFFER_SAMPLE_FN, (_ctx, data, size) => {
      if (data === null) return 0;
      const bytes = new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(data, Number(size)));
      onRecord(bytes.slice());
      return 0;
    });
    this.#rb = libbpfSymbols().ring_buffer__new(map.fd, this.#callback.pointer, null, null);
    if (this.#rb === null) {
      this.#callback.close();
      throw new Error(
        `ring_buffer__new on map "${map.name}" failed: the map is not a ring buffer or the ` +
          "kernel refused to map it (needs Linux 5.8+)",
      );
    }
  }

  /** Hands every record ready now to the callback; returns how many. */
  consume(): number {
    if (this.#rb === null) return 0;
    return unwrap("ring_buffer__consume", libbpfSymbols().ring_buffer__consume(this.#rb));
  }

  close(): void {
    if (this.#rb === null) return;
    libbpfSymbols().ring_buffer__free(this.#rb);
    this.#rb = null;
    this.#callback.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
