/**
 * What an exec in a probe pod prints, kept within a bound. The output is what a pod on the path
 * answered (a hostname, an iperf3 document, an error text): a hostile pod can answer without end,
 * so a cluster keeps at most EXEC_OUTPUT_LIMIT bytes of an exec (stdout and stderr together) and
 * ends the session at the first byte beyond it; the path then fails as TOO_LONG. Pure: the
 * clusters feed it their chunks.
 *
 * Pod-supplied text that goes into a path's message is cut to one line of at most
 * POD_TEXT_LIMIT characters (podLine()): one answer cannot make the report, the JSON of every
 * path or a log line as long as the answer.
 */
import type { ExecResult } from "./netcheck_cluster.ts";

/**
 * Bytes of an exec's output kept: iperf3 -J prints about 800 B per second of a test (one
 * interval each), so this covers `--bandwidth-time` up to about 20 minutes.
 */
export const EXEC_OUTPUT_LIMIT = 1 << 20;

/** Characters of a pod's text kept in a path's message. */
export const POD_TEXT_LIMIT = 300;

/** The error of an exec whose output went past `limit` bytes. */
export function tooLongError(limit: number): string {
  return `output above ${limit} bytes: cut and the session closed (a pod answering without end?)`;
}

/** The path's failure for an exec cut at the limit, if it was. */
export function tooLongOutcome(
  result: ExecResult,
): { ok: false; errorClass: "TOO_LONG"; message: string } | undefined {
  return result.tooLong && result.error !== undefined
    ? { ok: false, errorClass: "TOO_LONG", message: result.error }
    : undefined;
}

/** Collects an exec's stdout and stderr up to `limit` bytes in all. */
export class ExecOutput {
  #stdout: string[] = [];
  #stderr: string[] = [];
  #out = new TextDecoder();
  #err = new TextDecoder();
  #bytes = 0;
  #over = false;

  constructor(readonly limit = EXEC_OUTPUT_LIMIT) {}

  /**
   * Adds a chunk of stdout or stderr. False once the output went past the limit: the chunk
   * that crossed it and every later one are dropped (the caller ends the session).
   */
  add(stream: "stdout" | "stderr", chunk: Uint8Array): boolean {
    if (this.#over) return false;
    if (this.#bytes + chunk.byteLength > this.limit) {
      this.#over = true;
      return false;
    }
    this.#bytes += chunk.byteLength;
    const [into, decoder] = stream === "stdout"
      ? [this.#stdout, this.#out]
      : [this.#stderr, this.#err];
    into.push(decoder.decode(chunk, { stream: true }));
    return true;
  }

  /** The output went past the limit. */
  get tooLong(): boolean {
    return this.#over;
  }

  /** Bytes kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The text kept of each stream. */
  text(): { stdout: string; stderr: string } {
    return {
      stdout: this.#stdout.join("") + this.#out.decode(),
      stderr: this.#stderr.join("") + this.#err.decode(),
    };
  }
}

/**
 * The first line of `text` that is not blank, trimmed and cut to `max` characters (the cut
 * named): pod-supplied text for a path's message. Its control characters stay for the sinks to
 * escape (text/safe.ts).
 */
export function podLine(text: string, max = POD_TEXT_LIMIT): string {
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf("\n", start);
    const line = text.slice(start, end < 0 ? text.length : Math.min(end, start + 4 * max)).trim();
    if (line) {
      if (line.length <= max) return line;
      // Not between the halves of a surrogate pair.
      const cut = /[\ud800-\udbff]/.test(line[max - 1]) ? max - 1 : max;
      return `${line.slice(0, cut)}… (cut at ${max} characters)`;
    }
    if (end < 0) break;
    start = end + 1;
  }
  return "";
}
