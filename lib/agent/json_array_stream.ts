/**
 * A long JSON array (a full map's /targets: 65,536 items, ~15 MB) answered in time slices, the
 * event loop running between them, so that health probes are answered meanwhile and no piece
 * of text it makes outlives V8's young generation.
 */
import { TimeSlice, yieldToEventLoop } from "../time/timers.ts";

/**
 * Items per chunk of a streamed JSON array, at most: ~450 KB of /targets text,
 * where a fast machine writes more items than SLICE_MS allows.
 */
const ITEMS_PER_CHUNK = 2048;
/**
 * Items per piece of a chunk, each encoded on its own: ~15 KB of text. A whole
 * chunk's text (~120 KB for /targets) made one string past V8's large-object
 * size, allocated straight in the old generation: ~14 MB of it per full-map
 * /targets, so a few requests brought on a full collection of the agent's
 * heap (pauses of 20–80 ms) in the middle of a transfer.
 */
const ITEMS_PER_PIECE = 64;
/**
 * The longest the agent works on one long answer (/targets) before it lets
 * the event loop run, in ms: a health probe arriving meanwhile waits for the
 * rest of the slice. Each pause between slices is a timer (yieldToEventLoop,
 * ~2 ms here), so shorter slices make the transfer longer. Bench figure 7, a
 * full map, same machine and hour: slices of 4 ms (or 512 targets) held the
 * probes a median 3.2–3.4 ms, p99 3.9–5.1× idle, transfer 0.71–0.76 s; 1 ms:
 * 1.24 ms, 3.8×, 0.77 s; 0.5 ms: 0.56–0.80 ms, 1.1–1.9×, 1.07–1.27 s.
 */
export const SLICE_MS = 0.5;

/** How long jsonArrayResponse() works before it lets the event loop run, and its clock. */
export interface ChunkBudget {
  ms: number;
  now: () => number;
}

/**
 * A JSON array written in chunks, the event loop running between chunks: a
 * full map's /targets (65,536 targets, ~15 MB of JSON) would otherwise block
 * the agent for hundreds of milliseconds and hold it all at once. A chunk
 * ends after `perChunk` items or `budget.ms` of work, whichever comes first
 * (`items` given as a promise is awaited before the first: it may do work of
 * its own, in slices of its own). Each chunk is enqueued in pieces of
 * `perPiece` items, so that no string it makes outlives the young generation.
 */
export function jsonArrayResponse(
  items: Iterable<unknown> | AsyncIterable<unknown> | Promise<Iterable<unknown>>,
  perChunk = ITEMS_PER_CHUNK,
  perPiece = ITEMS_PER_PIECE,
  budget: ChunkBudget = { ms: SLICE_MS, now: () => performance.now() },
): Response {
  const encoder = new TextEncoder();
  let iterator: Iterator<unknown> | AsyncIterator<unknown> | undefined;
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (iterator) await yieldToEventLoop();
      if (!iterator) {
        const all = await items;
        iterator = Symbol.asyncIterator in all
          ? all[Symbol.asyncIterator]()
          : all[Symbol.iterator]();
      }
      const slice = new TimeSlice(budget.ms, budget.now);
      let text = first ? "[" : "";
      for (let i = 1; i <= perChunk; i++) {
        // A sync iterator's items are taken without a promise each (65,536 of them at a full map).
        const step = iterator.next();
        const next = step instanceof Promise ? await step : step;
        if (next.done) {
          controller.enqueue(encoder.encode(text + "]"));
          controller.close();
          return;
        }
        text += (first ? "" : ",") + JSON.stringify(next.value);
        first = false;
        if (i < perChunk && slice.spent()) break;
        if (i % perPiece === 0 && i < perChunk) {
          controller.enqueue(encoder.encode(text));
          text = "";
        }
      }
      if (text) controller.enqueue(encoder.encode(text));
    },
    cancel() {
      iterator?.return?.();
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
  });
}
