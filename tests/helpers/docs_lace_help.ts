/**
 * What `lace --help` and each command's `--help` say, read once on import by running main.ts:
 * the commands, their usage lines and flags, and the environment variables the flags read.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./docs_pages.ts";

/** What `lace --help` and each command's `--help` say. */
export interface LaceHelp {
  commands: Map<string, { usage: string; flags: Set<string> }>;
  envs: Set<string>;
}

async function run(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", join(REPO, "main.ts"), ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
}

async function laceHelp(): Promise<LaceHelp> {
  const top = await run(["--help"]);
  const list = top.split("Commands:")[1].split("\n\n")[0];
  const names = [...list.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]);
  assert.ok(names.includes("doctor"), `lace --help lists no commands:\n${top}`);
  const commands = new Map<string, { usage: string; flags: Set<string> }>();
  const envs = new Set<string>();
  for (const name of names) {
    const help = await run([name, "--help"]);
    // cobra's layout: `  -x, --name` or `      --name`.
    const flags = new Set(
      [...help.matchAll(/^ {2}(?:(-[a-zA-Z]), | {4})(--[a-z0-9-]+)/gm)].flatMap((m) =>
        m[1] ? [m[1], m[2]] : [m[2]]
      ),
    );
    for (const m of help.matchAll(/\(--no-([a-z0-9-]+)/g)) flags.add(`--no-${m[1]}`);
    for (const m of help.matchAll(/env ([A-Z0-9_]+(?:, [A-Z0-9_]+)*)/g)) {
      for (const env of m[1].split(", ")) envs.add(env);
    }
    commands.set(name, { usage: help.split("\n")[0], flags });
  }
  return { commands, envs };
}

export const HELP = await laceHelp();

/** Every flag of every `lace` command. */
export const LACE_FLAGS = new Set([...HELP.commands.values()].flatMap((c) => [...c.flags]));

/** The problems of `lace COMMAND WORDS…`: an unknown command, subcommand or flag. */
export function commandProblems(command: string, words: string[]): string[] {
  const spec = HELP.commands.get(command);
  if (!spec) return [`lace ${command}: no such command (lace --help)`];
  const out: string[] = [];
  const sub = words[0];
  if (sub && /^[a-z]+$/.test(sub) && !new RegExp(`\\b${sub}\\b`).test(spec.usage)) {
    out.push(`lace ${command} ${sub}: its usage names no ${sub} ("${spec.usage}")`);
  }
  for (const word of words.filter((w) => w.startsWith("--"))) {
    const flag = word.split("=")[0];
    if (!spec.flags.has(flag) && flag !== "--help") {
      out.push(`lace ${command} ${flag}: lace ${command} --help names no such flag`);
    }
  }
  return out;
}
