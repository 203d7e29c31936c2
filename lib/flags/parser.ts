/**
 * Command-line flags with environment fallbacks. A command declares, once per
 * flag, its name, environment variables, the option key it sets and how its
 * text becomes a typed value; defaults come from the command's options
 * object (for the agent, the Config's defaults), never from the flag table.
 * Precedence: flag > environment > default. Bad input is a UsageError (exit
 * code 2, every problem on its own line), never a stack trace.
 */
import { parseArgs } from "node:util";
import { formatDuration, MAX_TIMER_MS, parseDuration } from "../time/duration.ts";

/**
 * How a flag's text becomes a typed value. `parse` throws an Error whose
 * message completes the sentence "--flag …" (e.g. `must be a whole number: "x"`).
 */
export interface ValueParser<T> {
  /** Placeholder shown in help (e.g. DURATION). */
  metavar: string;
  parse(text: string): T;
  /** The value as an operator would write it, shown as the default in help ("" shows none). */
  format(value: T): string;
  /** A boolean flag takes no value on the command line (`--x`, `--no-x`). */
  boolean?: true;
  /** The only words it takes, for help and shell completion. */
  choices?: readonly string[];
}

/** One flag that sets the option `key` of the options object `O`. */
export interface Flag<O, K extends keyof O> {
  name: string;
  /** One letter, given as `-x` (cobra's shorthand). */
  short?: string;
  key: K;
  value: ValueParser<O[K]>;
  /** Environment variables read when the flag is absent, first set wins. */
  env?: readonly string[];
  help: string;
  /** Overrides the parser's placeholder in help. */
  metavar?: string;
  hidden?: boolean;
}

/** Any flag of options `O`, with the parser's type tied to the key it sets. */
export type FlagSpec<O> = { [K in keyof O]-?: Flag<O, K> }[keyof O];

/** A word a command takes first (`lace doctor probes`), with what it does. */
export interface Subcommand {
  name: string;
  summary: string;
  /** What it takes after its name (e.g. NAMESPACE/NAME), as help shows it. */
  args?: string;
}

export interface CommandSpec<O> {
  name: string;
  summary: string;
  usage: string;
  flags: readonly FlagSpec<O>[];
  /** The options when no flag or variable sets them; a fresh object on each call. */
  defaults: () => O;
  /** Allows positional arguments (e.g. `doctor probes`). */
  positionals?: boolean;
  /** The words it takes first, listed in help and offered by shell completion. */
  subcommands?: readonly Subcommand[];
}

/** Bad flags or values: printed one problem a line, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Any text, as given. */
export const text: ValueParser<string> = {
  metavar: "TEXT",
  parse: (t) => t,
  format: (v) => v,
};

/** true/false, 1/0, yes/no, on/off. */
export const boolean: ValueParser<boolean> = {
  metavar: "",
  boolean: true,
  parse(t) {
    const v = t.toLowerCase();
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
    throw new Error(`must be true or false: "${t}"`);
  },
  format: () => "",
};

/**
 * true/false (also 1/0, yes/no, on/off) given as a value, `--x=false`: for a
 * switch that is on by default and whose name reads as a setting.
 */
export const trueFalse: ValueParser<boolean> = {
  metavar: "BOOL",
  parse: (t) => boolean.parse(t),
  format: String,
};

/** A whole number in decimal. */
export const integer: ValueParser<number> = {
  metavar: "N",
  parse(t) {
    if (!/^\d+$/.test(t)) throw new Error(`must be a whole number: "${t}"`);
    return Number(t);
  },
  format: String,
};

/** A whole number in decimal or 0x hex, shown in hex (socket marks). */
export const mark: ValueParser<number> = {
  metavar: "MARK",
  parse(t) {
    if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(t)) {
      throw new Error(`must be a decimal or 0x hex number: "${t}"`);
    }
    return Number(t);
  },
  format: (v) => `0x${v.toString(16)}`,
};

const MAX_TIMER_HOURS = Math.floor(MAX_TIMER_MS / 3_600_000);

/**
 * A duration in milliseconds ("500ms", "5s", "1m30s"): never negative and
 * never longer than a timer can wait; each option bounds it further where
 * it is validated.
 */
export const duration: ValueParser<number> = {
  metavar: "DURATION",
  parse(t) {
    let ms;
    try {
      ms = parseDuration(t);
    } catch {
      throw new Error(`must be a duration such as 500ms, 5s or 1m30s: "${t}"`);
    }
    if (ms < 0) throw new Error(`must not be negative: "${t}"`);
    if (ms > MAX_TIMER_MS) {
      throw new Error(`must be at most ${MAX_TIMER_HOURS}h, the longest a timer can wait: "${t}"`);
    }
    return ms;
  },
  format: formatDuration,
};

/** One of a fixed list of words. */
export function oneOf<T extends string>(choices: readonly T[]): ValueParser<T> {
  return {
    metavar: choices.join("|"),
    parse(t) {
      const found = choices.find((c) => c === t);
      if (found === undefined) throw new Error(`must be one of ${choices.join(", ")}: "${t}"`);
      return found;
    },
    format: (v) => v,
    choices,
  };
}

/** `-h, --help`, which every command takes. */
export const HELP_FLAG = { name: "help", short: "h", help: "Show this help" } as const;

function setOption<O, K extends keyof O>(
  options: O,
  flag: Flag<O, K>,
  raw: string,
  from: string,
  problems: string[],
): void {
  try {
    options[flag.key] = flag.value.parse(raw);
  } catch (e) {
    problems.push(`${from} ${(e as Error).message}`);
  }
}

/**
 * Parses `args` against a command's flags, reading `env` for flags not given,
 * into the command's typed options. Every bad value is reported at once in
 * one UsageError. Returns the options, the positionals and whether help was asked.
 */
export function parseFlags<O>(
  command: CommandSpec<O>,
  args: string[],
  env: Record<string, string | undefined>,
): { options: O; positionals: string[]; help: boolean } {
  const argOptions: Record<string, { type: "string" | "boolean"; short?: string }> = {
    [HELP_FLAG.name]: { type: "boolean", short: HELP_FLAG.short },
  };
  for (const f of command.flags) {
    // parseArgs reads `--no-x` as "x off" only: a flag named no-x could never be given.
    if (f.value.boolean && f.name.startsWith("no-")) {
      throw new TypeError(`lace ${command.name}: name boolean flag --${f.name} without "no-"`);
    }
    argOptions[f.name] = { type: f.value.boolean ? "boolean" : "string" };
    if (f.short) argOptions[f.name].short = f.short;
  }
  const seeHelp = `see lace ${command.name} --help`;
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: argOptions,
      strict: true,
      allowPositionals: true,
      allowNegative: true,
    });
  } catch (e) {
    throw new UsageError(`${parseArgsProblem(e as Error & { code?: string })}: ${seeHelp}`);
  }
  if (!command.positionals && parsed.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}": ${seeHelp}`);
  }
  const options = command.defaults();
  const problems: string[] = [];
  // The environment first, then the flags given: a flag beats a variable even when another
  // flag (an alias, such as --json for --output json) sets the same option.
  for (const f of command.flags) {
    if (parsed.values[f.name] !== undefined) continue;
    const envName = f.env?.find((name) => env[name] !== undefined && env[name] !== "");
    if (envName) setOption(options, f, env[envName]!, envName, problems);
  }
  const setBy = new Map<unknown, string>();
  for (const f of command.flags) {
    const given = parsed.values[f.name];
    if (given === undefined) continue;
    const other = setBy.get(f.key);
    if (other !== undefined) {
      problems.push(`--${other} and --${f.name} both set the same option: give one`);
      continue;
    }
    setBy.set(f.key, f.name);
    setOption(options, f, String(given), `--${f.name}`, problems);
  }
  if (problems.length > 0) throw new UsageError(problems.join("\n"));
  return { options, positionals: parsed.positionals, help: parsed.values.help === true };
}

/** node:util's parseArgs error as one of Lace's lines, in its words. */
function parseArgsProblem(e: Error & { code?: string }): string {
  const option = /'(-[^' ,]+)(?:, (--[^' ]+))?/.exec(e.message);
  const name = option?.[2] ?? option?.[1];
  if (name && e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown flag ${name}`;
  if (name && /argument missing/.test(e.message)) return `flag ${name} needs a value`;
  if (name && /does not take an argument/.test(e.message)) return `flag ${name} takes no value`;
  if (name && /argument is ambiguous/.test(e.message)) {
    return `flag ${name} needs a value (one that starts with a dash is given as ${name}=-VALUE)`;
  }
  // Any other message in node's words, its first line (its advice follows on further lines).
  return e.message.split("\n")[0].replace(/\.$/, "");
}

/**
 * Parses a command's `args` (reading the environment for flags not given);
 * on `--help` prints the command's help and returns null, for the caller to
 * exit 0.
 */
export function parseCommand<O>(command: CommandSpec<O>, args: string[]): O | null {
  const { options, help } = parseFlags(command, args, Deno.env.toObject());
  if (help) {
    console.log(helpText(command));
    return null;
  }
  return options;
}

function defaultText<O, K extends keyof O>(flag: Flag<O, K>, defaults: O): string {
  return flag.value.format(defaults[flag.key]);
}

/** The text after a flag's name in help: its placeholder, or nothing for a switch. */
function placeholder<O>(flag: FlagSpec<O>): string {
  return flag.metavar ?? flag.value.metavar;
}

/**
 * The help text of one command, laid out as cobra's: usage, summary, its subcommands, then its
 * flags (`-x, --name` or `    --name`), each with its choices when the placeholder does not list
 * them, its default and its environment variables.
 */
export function helpText<O>(command: CommandSpec<O>): string {
  const lines = [`Usage: ${command.usage}`, "", command.summary, ""];
  if (command.subcommands?.length) {
    const subs = command.subcommands.map((
      s,
    ) => [`  ${s.name}${s.args ? ` ${s.args}` : ""}`, s.summary]);
    lines.push("Commands:", ...columns(subs), "");
  }
  lines.push("Flags:");
  const defaults = command.defaults();
  const rows = command.flags.filter((f) => !f.hidden).map((f) => {
    const shown = defaultText(f, defaults);
    const choices = f.value.choices;
    const extra = [
      choices && placeholder(f) !== choices.join("|") ? `one of ${choices.join(", ")}` : "",
      shown ? `default ${shown}` : "",
      f.env?.length ? `env ${f.env.join(", ")}` : "",
    ].filter(Boolean).join("; ");
    const value = placeholder(f);
    return [
      `  ${f.short ? `-${f.short}, ` : "    "}--${f.name}${value ? ` ${value}` : ""}`,
      extra ? `${f.help} (${extra})` : f.help,
    ];
  });
  rows.push([`  -${HELP_FLAG.short}, --${HELP_FLAG.name}`, HELP_FLAG.help]);
  lines.push(...columns(rows));
  return lines.join("\n");
}

/** Two columns, the second aligned two spaces after the longest first. */
function columns(rows: string[][]): string[] {
  const width = Math.max(...rows.map(([a]) => a.length)) + 2;
  return rows.map(([a, b]) => a.padEnd(width) + b);
}
