/** `lace version`: the agent's version, its BPF map layout and its runtime. */
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { VERSION } from "../version.ts";
import { type CommandSpec, parseCommand } from "../flags/parser.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";

const spec: CommandSpec<OutputSettings> = {
  name: "version",
  summary: "Print the version of lace, of its BPF map layout and of the Deno runtime.",
  usage: "lace version [-o text|json]",
  flags: outputFlags(),
  defaults: () => ({ output: "text" }),
};

export function runVersionCommand(args: string[]): Promise<number> {
  const options = parseCommand(spec, args);
  if (options === null) return Promise.resolve(0);
  const info = { version: VERSION, bpfAbi: ABI_VERSION, deno: Deno.version.deno };
  console.log(
    options.output === "json"
      ? JSON.stringify(info)
      : `lace ${info.version} (bpf abi ${info.bpfAbi}, deno ${info.deno})`,
  );
  return Promise.resolve(0);
}
