/** `lace version`: the agent's version, commit, build date, BPF map layout and runtime. */
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { type BuildInfo, buildInfo, VERSION } from "../version.ts";
import { type CommandSpec, parseCommand } from "../flags/parser.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";

/** The command's flags, for its help and shell completion. */
export const versionCommand: CommandSpec<OutputSettings> = {
  name: "version",
  summary: "Print the version of lace, the commit and date it was built from, the version of " +
    "its BPF map layout and of the Deno runtime.",
  usage: "lace version [-o text|json]",
  flags: outputFlags(),
  defaults: () => ({ output: "text" }),
};

/** What `lace version -o json` prints, as kubectl's version names its fields. */
export interface VersionInfo extends BuildInfo {
  version: string;
  bpfAbi: number;
  deno: string;
}

/** The text of `lace version`: one line. */
export function versionText(info: VersionInfo): string {
  const commit = info.commit === "unknown"
    ? "commit unknown"
    : `commit ${info.commit.slice(0, 12)}${info.treeState === "dirty" ? "-dirty" : ""}`;
  const built = info.buildDate ? `built ${info.buildDate}` : "run from source";
  return `lace ${info.version} (${commit}, ${built}, bpf abi ${info.bpfAbi}, deno ${info.deno})`;
}

export function runVersionCommand(args: string[]): Promise<number> {
  const options = parseCommand(versionCommand, args);
  if (options === null) return Promise.resolve(0);
  const info: VersionInfo = {
    version: VERSION,
    ...buildInfo(),
    bpfAbi: ABI_VERSION,
    deno: Deno.version.deno,
  };
  console.log(options.output === "json" ? JSON.stringify(info) : versionText(info));
  return Promise.resolve(0);
}
