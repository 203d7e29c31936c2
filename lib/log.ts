/**
 * Logging setup: LogTape with JSON lines when stderr is not a terminal (for
 * journald and container log collectors) and readable text on a terminal.
 * Every module logs through `getLogger(["lace", area])`; only main configures.
 */
import {
  configureSync,
  getAnsiColorFormatter,
  jsonLinesFormatter,
  type LogRecord,
  resetSync,
} from "@logtape/logtape";
import type { Config } from "./config.ts";

const encoder = new TextEncoder();

/** Configures the root "lace" logger; safe to call again (tests, demo). */
export function setupLogging(
  level: Config["logLevel"],
  format: Config["logFormat"],
  write: (bytes: Uint8Array) => void = (b) => Deno.stderr.writeSync(b),
): void {
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  const formatter = json ? jsonLinesFormatter : getAnsiColorFormatter({ timestamp: "time" });
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
