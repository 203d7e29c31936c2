/**
 * Whether the `lace` plugin the agent chains is there for the runtime to run:
 * a chained configuration naming a plugin missing from the runtime's CNI bin
 * directory fails every new pod's network setup, so the agent chains nothing
 * until it is. The runtime runs it as root, so it is held to the rule of the
 * files root writes (root_dir.ts): a regular file, root's, writable by no one
 * else, in a directory only root may change; and executable.
 */
import { join } from "node:path";
import { judgeRootFile, sharedDirProblem } from "../../os/root_dir.ts";

/** The plugin's name in the bin directory: the `type` of the chained entry. */
export const PLUGIN_NAME = "lace";

/**
 * Why the runtime could not run the lace plugin from `binDir`, or could run
 * one someone other than root put there, with what to do; undefined when it is fine.
 */
export function pluginProblem(
  binDir: string,
  owner: number = Deno.uid() ?? 0,
): string | undefined {
  const path = join(binDir, PLUGIN_NAME);
  const install = `install it (the chart's install-cni init container copies it at every agent ` +
    `start; by hand: \`install -o root -m 0755 lace "${path}"\`) or point --cni-bin-dir ` +
    `(LACE_CNI_BIN_DIR, the chart's node.cni.binDir) at the runtime's CNI bin directory`;
  let real: string;
  try {
    real = Deno.realPathSync(binDir);
  } catch (e) {
    return `The CNI bin directory "${binDir}" cannot be read (${(e as Error).message}), so ` +
      `the lace plugin cannot be found there: ${install}`;
  }
  let why: string | undefined;
  try {
    const dir = sharedDirProblem(real, owner);
    if (dir) why = `is in "${binDir}", which ${dir}`;
    else {
      const stat = Deno.lstatSync(join(real, PLUGIN_NAME));
      why = judgeRootFile(stat, owner) ??
        ((stat.mode ?? 0) & 0o100
          ? undefined
          : `is not executable (mode ${((stat.mode ?? 0) & 0o7777).toString(8).padStart(4, "0")})`);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      return `The lace plugin "${path}" cannot be checked: ${(e as Error).message}; ${install}`;
    }
    return `The lace plugin "${path}" is missing: ${install}`;
  }
  if (!why) return undefined;
  return `The lace plugin "${path}" ${why}, and the runtime runs it as root: make it a regular ` +
    `file, root's, executable and writable by no one else, in a directory only root may ` +
    `write (\`chown root "${path}" && chmod 0755 "${path}"\`), or ${install}`;
}
