/**
 * Command-line flags with environment fallbacks: one declarative table per
 * subcommand, parsed into typed values with the precedence flag > env >
 * default. Bad input is a UsageError (exit code 2, one line), never a stack
 * trace.
 */
import { parseArgs } from "node:util";

export type FlagType = "string" | "boolean" | "int" | "duration" | "mark";

export interface FlagSpec {
  name: string;
  type: FlagType;
  /** Environment variables read when the flag is absent, first found wins. */
  env?: string[];
  default?: string | boolean | number;
  help: string;
  /** Value placeholder shown in help. */
  metavar?: string;
  /** Accepted values, checked after parsing. */
  choices?: readonly string[];
  hidden?: boolean;
}

export interface CommandSpec {
  name: string;
  summary: string;
  usage: string;
  flags: FlagSpec[];
  /** Allows positional arguments (e.g. `doctor probes`). */
  positionals?: boolean;
}

/** Bad flags or values: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type FlagValues = Record<string, string | boolean | number | undefined>;

const helpFlag: FlagSpec = { name: "help", type: "boolean", help: "Show this help" };

/** Parses "250ms", "5s", "2m", "1h" (and combinations like "1m30s") into milliseconds. */
export function parseDuration(text: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0, consumed = 0;
  for (const m of text.matchAll(re)) {
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
    total += Number(m[1]) * unit;
    consumed += m[0].length;
  }
  if (text === "" || consumed !== text.length) {
    throw new UsageError(
      `Invalid duration "${text}": use a number with a unit, e.g. 500ms, 5s, 5m`,
    );
  }
  return total;
}

function convert(spec: FlagSpec, raw: string | boolean, from: string): string | boolean | number {
  if (spec.type === "boolean") {
    if (typeof raw === "boolean") return raw;
    const v = raw.toLowerCase();
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
    throw new UsageError(`${from} must be true or false: "${raw}"`);
  }
  const text = String(raw);
  let value: string | number = text;
  if (spec.type === "int" || spec.type === "mark") {
    const ok = spec.type === "mark" ? /^(0x[0-9a-fA-F]+|\d+)$/.test(text) : /^\d+$/.test(text);
    if (!ok) {
      throw new UsageError(
        `${from} must be ${
          spec.type === "mark" ? "a decimal or 0x hex number" : "a whole number"
        }: "${text}"`,
      );
    }
    value = Number(text);
  } else if (spec.type === "duration") {
    try {
      value = parseDuration(text);
    } catch (e) {
      throw new UsageError(`${from}: ${(e as Error).message}`);
    }
  }
  if (spec.choices && !spec.choices.includes(text)) {
    throw new UsageError(`${from} must be one of ${spec.choices.join(", ")}: "${text}"`);
  }
  return value;
}

/**
 * Parses `args` against a command's flags, reading `env` for flags not given.
 * Returns the values by flag name, plus positionals and whether help was asked.
 */
export function parseFlags(
  command: CommandSpec,
  args: string[],
  env: Record<string, string | undefined>,
): { values: FlagValues; positionals: string[]; help: boolean } {
  const flags = [...command.flags, helpFlag];
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const f of flags) options[f.name] = { type: f.type === "boolean" ? "boolean" : "string" };
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: true,
      allowNegative: true,
    });
  } catch (e) {
    const message = (e as Error).message.replace(/\. To specify.*$/s, "").replace(/\.$/, "");
    throw new UsageError(`lace ${command.name}: ${message}`);
  }
  if (!command.positionals && parsed.positionals.length > 0) {
    throw new UsageError(
      `lace ${command.name}: unexpected argument "${parsed.positionals[0]}" (see --help)`,
    );
  }
  const values: FlagValues = {};
  for (const f of command.flags) {
    const given = parsed.values[f.name];
    if (given !== undefined) {
      values[f.name] = convert(f, given as string | boolean, `--${f.name}`);
      continue;
    }
    const envName = f.env?.find((name) => env[name] !== undefined && env[name] !== "");
    if (envName) {
      values[f.name] = convert(f, env[envName]!, envName);
      continue;
    }
    values[f.name] = f.default === undefined
      ? undefined
      : convert(f, f.default as string, "default");
  }
  return { values, positionals: parsed.positionals, help: parsed.values.help === true };
}

/** The help text of one command: usage, summary, flags with env names and defaults. */
export function helpText(command: CommandSpec): string {
  const lines = [`Usage: ${command.usage}`, "", command.summary, "", "Flags:"];
  const rows = [...command.flags.filter((f) => !f.hidden), helpFlag].map((f) => {
    const meta = f.type === "boolean" ? "" : ` ${f.metavar ?? f.type.toUpperCase()}`;
    const extra = [
      f.default !== undefined && f.default !== "" && f.type !== "boolean"
        ? `default ${f.type === "mark" ? `0x${Number(f.default).toString(16)}` : f.default}`
        : "",
      f.env?.length ? `env ${f.env.join(", ")}` : "",
    ].filter(Boolean).join("; ");
    return [`  --${f.name}${meta}`, extra ? `${f.help} (${extra})` : f.help];
  });
  const width = Math.max(...rows.map(([a]) => a.length)) + 2;
  for (const [a, b] of rows) lines.push(a.padEnd(width) + b);
  return lines.join("\n");
}
