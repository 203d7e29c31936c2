/**
 * `lace uninstall`: removes Lace's pins (maps and links) from bpffs. The
 * kernel detaches a link's program when its last reference goes, so this
 * removes exactly what Lace attached and nothing another program owns.
 * Run it after stopping the agent; a running agent would keep its own
 * references until it exits.
 */
import { helpText, parseFlags } from "./flags.ts";
import { nodeFlags } from "./agent_flags.ts";

const spec = {
  name: "uninstall",
  summary:
    "Remove Lace's pinned maps and links (which detaches its programs from the kubelet cgroup). Stop the agent first.",
  usage: "lace uninstall [--pin-path DIR]",
  flags: nodeFlags.filter((f) => f.name === "pin-path"),
};

export async function runUninstallCommand(args: string[]): Promise<number> {
  const { values, help } = parseFlags(spec, args, Deno.env.toObject());
  if (help) {
    console.log(helpText(spec));
    return 0;
  }
  const { uninstall } = await import("../datapath/pins.ts");
  const removed = uninstall(values["pin-path"] as string);
  console.log(
    removed.length
      ? `Removed ${removed.length} pins:\n${removed.map((p) => `  ${p}`).join("\n")}`
      : `Nothing to remove under ${values["pin-path"]}`,
  );
  return 0;
}
