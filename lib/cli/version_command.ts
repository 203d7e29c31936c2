/** `lace version`: the agent's version, its BPF map layout and its runtime. */
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { VERSION } from "../version.ts";
import { helpText, parseFlags } from "./flags.ts";

const spec = {
  name: "version",
  summary: "Print the version of lace, of its BPF map layout and of the Deno runtime.",
  usage: "lace version [--json]",
  flags: [{ name: "json", type: "boolean" as const, help: "Print JSON" }],
};

export function runVersionCommand(args: string[]): Promise<number> {
  const { values, help } = parseFlags(spec, args, Deno.env.toObject());
  if (help) {
    console.log(helpText(spec));
    return Promise.resolve(0);
  }
  const info = { version: VERSION, bpfAbi: ABI_VERSION, deno: Deno.version.deno };
  console.log(
    values.json
      ? JSON.stringify(info)
      : `lace ${info.version} (bpf abi ${info.bpfAbi}, deno ${info.deno})`,
  );
  return Promise.resolve(0);
}
