/**
 * The commands the flag parser's tests parse: lace agent's, read through `parse`, and two toy
 * commands, one with a hidden flag and variables, one with a one-letter flag and two flags that
 * set one option.
 */
import { boolean, type CommandSpec, integer, oneOf, parseFlags, text } from "./parser.ts";
import { agentCommand } from "./agent.ts";

/** lace agent's options from `args` and `env`. */
export const parse = (args: string[], env: Record<string, string> = {}) =>
  parseFlags(agentCommand, args, env).options;

interface Toy {
  name: string;
  count: number;
  on: boolean;
  secret: string;
}

/** A command with variables, a placeholder, a default and a hidden flag. */
export const toy: CommandSpec<Toy> = {
  name: "toy",
  summary: "A toy command.",
  usage: "lace toy [flags]",
  flags: [
    { name: "name", key: "name", value: text, env: ["TOY_NAME", "NAME"], help: "The name" },
    { name: "count", key: "count", value: integer, metavar: "COUNT", help: "How many" },
    { name: "on", key: "on", value: boolean, env: ["TOY_ON"], help: "Switch" },
    { name: "secret", key: "secret", value: text, hidden: true, help: "Hidden" },
  ],
  defaults: () => ({ name: "", count: 3, on: false, secret: "" }),
};

/** A command with a one-letter flag, and --output and --json setting one option. */
export const shortToy: CommandSpec<{ output: "text" | "json"; name: string }> = {
  name: "toy",
  summary: "A toy command.",
  usage: "lace toy [flags]",
  flags: [
    {
      name: "output",
      short: "o",
      key: "output",
      value: oneOf(["text", "json"] as const),
      env: ["TOY_OUTPUT"],
      help: "Format",
    },
    {
      name: "json",
      key: "output",
      value: { ...boolean, parse: (t) => boolean.parse(t) ? "json" : "text", format: () => "" },
      env: ["TOY_JSON"],
      help: "Same as --output json",
    },
    { name: "name", key: "name", value: text, metavar: "NAME", help: "A name" },
  ],
  defaults: () => ({ output: "text", name: "" }),
};
