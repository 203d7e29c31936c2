/**
 * Logging setup: LogTape with JSON lines when stderr is not a terminal (for
 * journald and container log collectors) and readable text on a terminal.
 * Every module logs through `getLogger(["lace", area])`; only main configures.
 * Logged values name pods, annotations and paths their authors chose, and are
 * read on terminals: both formats escape what a terminal could act on
 * (text/safe.ts). A text log writes an Error's message in its line and the
 * error's own stack frames and causes below it, one per indented line
 * (error_format.ts); a JSON log keeps each record on one line.
 */
import {
  configureSync,
  getAnsiColorFormatter,
  jsonLinesFormatter,
  type LogRecord,
  resetSync,
} from "@logtape/logtape";
import { escapeUnsafe, safeJsonText } from "../text/safe.ts";
import { errorLogText } from "./error_format.ts";

/** The levels the "lace" logger can be set to, from the most to the least verbose. */
export type LogLevel = "trace" | "debug" | "info" | "warning" | "error" | "fatal";
export const LOG_LEVELS: readonly LogLevel[] = [
  "trace",
  "debug",
  "info",
  "warning",
  "error",
  "fatal",
];

/** auto: text on a terminal, JSON lines otherwise. */
export const LOG_FORMATS = ["auto", "json", "text"] as const;
export type LogFormat = typeof LOG_FORMATS[number];

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
export interface LogSettings {
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/** Configures the root "lace" logger; safe to call again (tests, demo). */
export function setupLogging(
  level: LogLevel,
  format: LogFormat,
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
