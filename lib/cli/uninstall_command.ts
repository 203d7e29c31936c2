/**
 * `lace uninstall`: removes Lace's pins (maps and links) from bpffs. The
 * kernel detaches a link's program when its last reference goes, so this
 * removes exactly what Lace attached and nothing another program owns.
 * Run it after stopping the agent; a running agent would keep its own
 * references until it exits.
 */
import { defaultConfig, type NodeSettings } from "../config.ts";
import type { CommandSpec } from "./flags.ts";
import { nodeFlags, parseNodeCommand } from "./agent_flags.ts";

const spec: CommandSpec<Pick<NodeSettings, "pinPath">> = {
  name: "uninstall",
  summary:
    "Remove Lace's pinned maps and links (which detaches its programs from the kubelet cgroup). Stop the agent first.",
  usage: "lace uninstall [--pin-path DIR]",
  flags: [nodeFlags.pinPath],
  defaults: () => ({ pinPath: defaultConfig().pinPath }),
};

export async function runUninstallCommand(args: string[]): Promise<number> {
  const options = parseNodeCommand(spec, args);
  if (options === null) return 0;
  const { uninstall } = await import("../datapath/pins.ts");
  const removed = uninstall(options.pinPath);
  console.log(
    removed.length
      ? `Removed ${removed.length} pins:\n${removed.map((p) => `  ${p}`).join("\n")}`
      : `Nothing to remove under ${options.pinPath}`,
  );
  return 0;
}
