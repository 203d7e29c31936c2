/**
 * `lace uninstall`: restores the CNI configuration files the agent chained
 * (byte for byte where they are still what it wrote), removes Lace's pins
 * (maps and links) from bpffs, and, with --cni-bin-dir, the `lace` plugin
 * binary once no configuration names it any more (a configuration naming a
 * missing plugin fails every new pod). The kernel detaches a link's program
 * when its last reference goes, so this removes exactly what Lace attached
 * and nothing another program owns. Run it after stopping the agent; a
 * running agent would keep its own references and chain the files again.
 * A pin path, CNI configuration directory or chaining state that is not
 * root's alone (a symlink, another owner, writable by others) is refused,
 * not followed, and the command exits 1.
 */
import { join } from "node:path";
import { defaultConfig, type NodeSettings } from "../config.ts";
import { type CommandSpec, text } from "../flags/parser.ts";
import { nodeFlags, parseNodeCommand } from "../flags/agent.ts";

type UninstallOptions = Pick<NodeSettings, "pinPath" | "cniConfDir" | "cniStateDir"> & {
  cniBinDir: string;
};

/** The command's flags, for its help and shell completion. */
export const uninstallCommand: CommandSpec<UninstallOptions> = {
  name: "uninstall",
  summary:
    "Restore the CNI configuration the agent chained, remove Lace's pinned maps and links (which detaches its programs from the kubelet cgroup) and, with --cni-bin-dir, the lace plugin once no configuration names it. Stop the agent first.",
  usage:
    "lace uninstall [--pin-path DIR] [--cni-conf-dir DIR] [--cni-state-dir DIR] [--cni-bin-dir DIR]",
  flags: [nodeFlags.pinPath, nodeFlags.cniConfDir, nodeFlags.cniStateDir, {
    name: "cni-bin-dir",
    key: "cniBinDir",
    value: text,
    env: ["LACE_CNI_BIN_DIR"],
    metavar: "DIR",
    help:
      "Remove the lace plugin from this CNI bin directory once no configuration in --cni-conf-dir names it (default: leave it)",
  }],
  defaults: () => {
    const { pinPath, cniConfDir, cniStateDir } = defaultConfig();
    return { pinPath, cniConfDir, cniStateDir, cniBinDir: "" };
  },
};

export async function runUninstallCommand(args: string[]): Promise<number> {
  const options = parseNodeCommand(uninstallCommand, args);
  if (options === null) return 0;
  const { Chainer } = await import("../cni/chaining/chainer.ts");
  const { chainStatus } = await import("../cni/chaining/status.ts");
  const chainer = new Chainer({
    confDir: options.cniConfDir,
    stateDir: options.cniStateDir,
    socket: "",
    targets: [],
  });
  const restored = chainer.restoreAll();
  for (const r of restored.reports) {
    console.log(`${r.level === "warning" ? "Warning: " : ""}${r.message}`);
  }
  if (restored.reports.length === 0) {
    console.log(`No CNI configuration to restore in ${options.cniConfDir}`);
  }
  // A directory, file or record refused as another user's to steer, or a file that kept
  // changing, was not restored: the command says so by its exit code.
  const refused = restored.reports.filter((r) =>
    r.reason === "unsafe" || r.reason === "bad-record" || r.reason === "raced"
  );
  if (refused.length > 0) {
    console.error(
      `lace uninstall: ${refused.length} CNI configuration problem(s) above were not restored`,
    );
  }
  let code = refused.length > 0 ? 1 : 0;
  if (options.cniBinDir) {
    const naming = chainStatus(options.cniConfDir).naming;
    const binary = join(options.cniBinDir, "lace");
    if (naming.length > 0) {
      console.error(
        `lace uninstall: kept ${binary}: ${
          naming.join(", ")
        } still name the lace plugin (chained by hand?): take it out of them first`,
      );
      code = 1;
    } else {
      try {
        Deno.removeSync(binary);
        console.log(`Removed ${binary}`);
      } catch (e) {
        // A read-only mount (the chart's agent container, whose LACE_CNI_BIN_DIR this inherits).
        if (!(e instanceof Deno.errors.NotFound)) {
          console.error(
            `lace uninstall: kept ${binary}: ${
              (e as Error).message
            }; remove it on the host, or pass --cni-bin-dir= to leave it`,
          );
          code = 1;
        }
      }
    }
  }
  const { removeLacePins } = await import("../datapath/pins.ts");
  const pins = removeLacePins(options.pinPath);
  if (pins.refused !== undefined) {
    console.error(`lace uninstall: no pins removed: ${pins.refused}`);
    return 1;
  }
  const { removed } = pins;
  console.log(
    removed.length
      ? `Removed ${removed.length} pins:\n${removed.map((p) => `  ${p}`).join("\n")}`
      : `Nothing to remove under ${options.pinPath}`,
  );
  return code;
}
