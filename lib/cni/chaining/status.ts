/**
 * Whether the node's CNI configuration names the `lace` plugin, read-only:
 * for `lace doctor`, and for `lace uninstall`, which keeps the binary while
 * any configuration still names it (a configuration naming a missing plugin
 * fails every new pod's ADD).
 */
import { join } from "node:path";
import { CHAINED_BY, CHAINED_BY_KEY, LACE_TYPE, parseConfig } from "./conflist.ts";
import { listNames, oversized, readConfig, realDir } from "./file_read.ts";
import { confDirProblem } from "./file_write.ts";
import { stateProblems } from "./state.ts";
import { selectFiles } from "./select.ts";
import { type RuntimeChoice, runtimeFileIn } from "./runtime_file.ts";
import { type ContainerRuntime, runtimeName } from "./runtimes.ts";

export type ChainState =
  /** The runtime's file chains the agent's `lace` entry. */
  | "chained"
  /** The runtime's file chains a `lace` entry someone wrote by hand. */
  | "hand-chained"
  | "not-chained"
  /** The runtime's file is one Lace cannot parse or chain (the runtime loads it). */
  | "unparsable"
  /** The runtime can use no file of the directory (containerd: the first is invalid). */
  | "unusable"
  /** No configuration file (yet): the network plugin has not written one. */
  | "no-config"
  | "unreadable";

export interface ChainStatus {
  dir: string;
  /** The file the runtime uses, when there is one. */
  file?: string;
  state: ChainState;
  /** Every configuration file of the directory that names `lace` (by the agent or by hand). */
  naming: string[];
  message: string;
  /**
   * Why the agent writes nothing there, or not some file or record: the
   * directory, the runtime's file or the state someone other than root may
   * change (or a symlink), or a state record that is not the agent's data.
   */
  problems: string[];
}

/**
 * What the runtime's configuration in `confDir` says about `lace`, the runtime's
 * file chosen by `runtime`'s rule (runtime_file.ts; undefined: CRI-O's), and,
 * with `stateDir`, whether the agent's state there may be trusted.
 */
export function chainStatus(
  confDir: string,
  stateDir?: string,
  runtime?: ContainerRuntime,
): ChainStatus {
  let dir: string;
  let names: string[];
  const problems = stateDir ? stateProblems(stateDir) : [];
  try {
    dir = realDir(confDir);
    names = listNames(dir);
  } catch (e) {
    return {
      dir: confDir,
      state: "unreadable",
      naming: [],
      message: `${confDir} cannot be read: ${(e as Error).message}`,
      problems,
    };
  }
  const dirProblem = confDirProblem(confDir, dir);
  if (dirProblem) problems.unshift(dirProblem);
  const naming: string[] = [];
  const states = new Map<string, ChainState>();
  const errors = new Map<string, string>();
  let choice: RuntimeChoice;
  try {
    choice = runtimeFileIn(dir, runtime);
  } catch (e) {
    return {
      dir: confDir,
      state: "unreadable",
      naming,
      message: `${confDir} cannot be read: ${(e as Error).message}`,
      problems,
    };
  }
  const who = runtimeName(runtime);
  for (const { name } of selectFiles(names, [{ pattern: "*" }])) {
    const file = readConfig(dir, name);
    if (!file) continue;
    if (file.unsafe && name === choice.file) {
      problems.push(
        `${join(confDir, name)}, the configuration ${who} uses, ${file.unsafe}: the agent ` +
          "does not chain it",
      );
    }
    try {
      const tooLarge = oversized(file);
      if (tooLarge) throw new TypeError(tooLarge);
      const laces = parseConfig(name, file.bytes).list.plugins.filter((p) => p.type === LACE_TYPE);
      if (laces.length > 0) naming.push(name);
      states.set(
        name,
        laces.length === 0
          ? "not-chained"
          : laces.some((p) => p[CHAINED_BY_KEY] === CHAINED_BY)
          ? "chained"
          : "hand-chained",
      );
    } catch (e) {
      states.set(name, "unparsable");
      errors.set(name, (e as Error).message);
    }
  }
  if (!choice.file) {
    return {
      dir: confDir,
      state: choice.none ? "unusable" : "no-config",
      naming,
      message: choice.none ?? `${confDir} holds no CNI configuration`,
      problems,
    };
  }
  const state = states.get(choice.file) ?? "unreadable";
  const path = join(confDir, choice.file);
  const skipped = choice.skipped.map((s) => `${who} skips "${s.name}" (${s.error}); `).join("");
  const message = skipped + {
    chained: `${path} chains the lace plugin (written by the agent)`,
    "hand-chained": `${path} chains the lace plugin (written by hand)`,
    "not-chained": `${path}, the configuration ${who} uses, does not chain the lace plugin`,
    unparsable: `${path}, the configuration ${who} uses, is one Lace cannot chain: ${
      errors.get(choice.file)
    }`,
    unusable: "",
    "no-config": "",
    unreadable: `${path} cannot be read`,
  }[state];
  return { dir: confDir, file: choice.file, state, naming, message, problems };
}
