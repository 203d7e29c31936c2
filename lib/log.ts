/**
 * Logging setup: LogTape with JSON lines when stderr is not a terminal (for
 * journald and container log collectors) and readable text on a terminal.
 * Every module logs through `getLogger(["lace", area])`; only main configures.
 * Logged values name pods, annotations and paths their authors chose, and are
 * read on terminals: both formats escape what a terminal could act on
 * (safe_text.ts).
 */
import {
  configureSync,
  getAnsiColorFormatter,
  jsonLinesFormatter,
  type LogRecord,
  resetSync,
} from "@logtape/logtape";
import type { Config } from "./config.ts";
import { escapeUnsafe, safeJsonText } from "./safe_text.ts";

const encoder = new TextEncoder();

/**
 * jsonLinesFormatter's line with every unsafe character as a JSON escape: it leaves C1 and bidi
 * characters raw (and writes nested values with JSON.stringify).
 */
function safeJsonLines(record: LogRecord): string {
  return safeJsonText(jsonLinesFormatter(record));
}

/** Configures the root "lace" logger; safe to call again (tests, demo). */
export function setupLogging(
  level: Config["logLevel"],
  format: Config["logFormat"],
  write: (bytes: Uint8Array) => void = (b) => Deno.stderr.writeSync(b),
): void {
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  const formatter = json ? safeJsonLines : getAnsiColorFormatter({
    timestamp: "time",
    // Deno.inspect escapes C0 and C1 in a string it quotes, but not bidi or format characters,
    // and prints an Error's message raw: each value's text is escaped, without colour codes.
    value: (value, inspect) => escapeUnsafe(inspect(value, { colors: false })),
  });
  const sink = (record: LogRecord) => {
    try {
      write(encoder.encode(formatter(record)));
    } catch {
      // A closed stderr must not take the agent down.
    }
  };
  resetSync();
  configureSync({
    sinks: { stderr: sink },
    loggers: [
      { category: ["lace"], lowestLevel: level, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}
