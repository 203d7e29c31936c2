/** `lace version`: the agent's version, its BPF map layout and its runtime. */
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { VERSION } from "../version.ts";
import { boolean, type CommandSpec, parseCommand } from "../flags/parser.ts";

const spec: CommandSpec<{ json: boolean }> = {
  name: "version",
  summary: "Print the version of lace, of its BPF map layout and of the Deno runtime.",
  usage: "lace version [--json]",
  flags: [{ name: "json", key: "json", value: boolean, help: "Print JSON" }],
  defaults: () => ({ json: false }),
};

export function runVersionCommand(args: string[]): Promise<number> {
  const options = parseCommand(spec, args);
  if (options === null) return Promise.resolve(0);
  const info = { version: VERSION, bpfAbi: ABI_VERSION, deno: Deno.version.deno };
  console.log(
    options.json
      ? JSON.stringify(info)
      : `lace ${info.version} (bpf abi ${info.bpfAbi}, deno ${info.deno})`,
  );
  return Promise.resolve(0);
}
