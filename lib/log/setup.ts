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
  getTextFormatter,
  jsonLinesFormatter,
  type LogRecord,
  resetSync,
} from "@logtape/logtape";
import { escapeUnsafe, safeJsonText } from "../text/safe.ts";
import { errorChainInline, errorLogText } from "./error_format.ts";

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
 * characters raw (and writes nested values with JSON.stringify). An Error in the message is its
 * message and its causes' (JSON.stringify writes an Error as `{}`); in the properties the
 * formatter already writes its name, message, stack and cause.
 */
function safeJsonLines(record: LogRecord): string {
  const message = record.message.map((part, i) =>
    i % 2 === 1 && part instanceof Error ? errorChainInline(part) : part
  );
  return safeJsonText(jsonLinesFormatter({ ...record, message }));
}

/**
 * Whether a text log may colour its lines: only on a terminal, and never with NO_COLOR set to
 * anything but the empty string (https://no-color.org), as journald and files read escape codes
 * as text.
 */
export function logColour(isTerminal: boolean, noColor: string | undefined): boolean {
  return isTerminal && !noColor;
}

/**
 * The text formatter: each value's text escaped (Deno.inspect escapes C0 and C1 in a string it
 * quotes, but not bidi or format characters, and prints an Error's message raw), coloured only
 * when `colour`. An Error shows its message in the line and its stack below the line.
 */
function textLines(colour: boolean): (record: LogRecord) => string {
  let below: string[] = [];
  const options = {
    timestamp: "time",
    value: (
      value: unknown,
      inspect: (value: unknown, options?: { colors?: boolean }) => string,
    ) => {
      if (!(value instanceof Error)) return escapeUnsafe(inspect(value, { colors: false }));
      const { inline, lines } = errorLogText(value);
      below.push(...lines);
      return inline;
    },
  } as const;
  // The plain layout is the coloured one without its codes: `time LVL category: message`.
  const line = colour ? getAnsiColorFormatter(options) : getTextFormatter({
    ...options,
    format: ({ timestamp, level, category, message }) =>
      `${timestamp} ${level} ${category}: ${message}`,
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

/**
 * Configures the root "lace" logger; safe to call again (tests, demo). `colour` says whether a
 * text log may use colour codes (logColour(): stderr is a terminal and NO_COLOR is not set).
 */
export function setupLogging(
  level: LogLevel,
  format: LogFormat,
  write: (bytes: Uint8Array) => void = (b) => Deno.stderr.writeSync(b),
  colour: boolean = logColour(Deno.stderr.isTerminal(), Deno.env.get("NO_COLOR")),
): void {
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  const formatter = json ? safeJsonLines : textLines(colour);
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
