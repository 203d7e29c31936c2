/**
 * Logging setup: LogTape with JSON lines when stderr is not a terminal (for
 * journald and container log collectors) and readable text on a terminal.
 * Every module logs through `getLogger(["lace", area])`; only main configures.
 * Logged values name pods, annotations and paths their authors chose, and are
 * read on terminals: both formats escape what a terminal could act on
 * (safe_text.ts). A text log writes an Error's message in its line and the
 * error's own stack frames and causes below it, one per indented line
 * (log_error.ts); a JSON log keeps each record on one line.
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
import { errorLogText } from "./log_error.ts";

const encoder = new TextEncoder();

/**
 * jsonLinesFormatter's line with every unsafe character as a JSON escape: it leaves C1 and bidi
 * characters raw (and writes nested values with JSON.stringify).
 */
function safeJsonLines(record: LogRecord): string {
  return safeJsonText(jsonLinesFormatter(record));
}

/**
 * The terminal's formatter: each value's text escaped, without colour codes (Deno.inspect
 * escapes C0 and C1 in a string it quotes, but not bidi or format characters, and prints an
 * Error's message raw). An Error shows its message in the line and its stack below the line.
 */
function textLines(): (record: LogRecord) => string {
  let below: string[] = [];
  const line = getAnsiColorFormatter({
    timestamp: "time",
    value: (value, inspect) => {
      if (!(value instanceof Error)) return escapeUnsafe(inspect(value, { colors: false }));
      const { inline, lines } = errorLogText(value);
      below.push(...lines);
      return inline;
    },
  });
  return (record) => {
    below = [];
    const text = line(record);
    return below.length === 0 ? text : `${text}${below.join("\n")}\n`;
  };
}

/** The logging settings a long-running command carries (its --log-level and --log-format). */
export type LogSettings = Pick<Config, "logLevel" | "logFormat">;

/** Configures the root "lace" logger; safe to call again (tests, demo). */
export function setupLogging(
  level: Config["logLevel"],
  format: Config["logFormat"],
  write: (bytes: Uint8Array) => void = (b) => Deno.stderr.writeSync(b),
): void {
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  const formatter = json ? safeJsonLines : textLines();
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
