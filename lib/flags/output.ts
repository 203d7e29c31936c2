/**
 * `-o/--output text|json`, which every command that prints data takes (kubectl's, cilium's and
 * istioctl's flag), and `--json`, the name Lace's commands first took, kept as its alias: one
 * definition, so the same flag and variables mean the same everywhere.
 */
import { boolean, type FlagSpec, oneOf, type ValueParser } from "./parser.ts";

export const OUTPUT_FORMATS = ["text", "json"] as const;
export type OutputFormat = typeof OUTPUT_FORMATS[number];

/** The option a command that prints data carries. */
export interface OutputSettings {
  output: OutputFormat;
}

/** `--json` (`--no-json`): the output as JSON (as text). */
const jsonSwitch: ValueParser<OutputFormat> = {
  metavar: "",
  boolean: true,
  parse: (t) => boolean.parse(t) ? "json" : "text",
  format: () => "",
};

const OUTPUT_FLAGS: FlagSpec<OutputSettings>[] = [
  {
    name: "output",
    short: "o",
    key: "output",
    value: oneOf(OUTPUT_FORMATS),
    env: ["LACE_OUTPUT"],
    help: "Output format",
  },
  {
    name: "json",
    key: "output",
    value: jsonSwitch,
    env: ["LACE_JSON"],
    help: "Same as --output json",
  },
];

/**
 * The output flags for a command whose options include OutputSettings. The cast only widens the
 * options type: each flag writes `output`, whose type is OutputSettings' in every such command.
 */
export function outputFlags<O extends OutputSettings>(): FlagSpec<O>[] {
  return OUTPUT_FLAGS as unknown as FlagSpec<O>[];
}
