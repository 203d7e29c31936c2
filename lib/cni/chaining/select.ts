/**
 * Which configuration files of the CNI directory the agent chains into when
 * they are configured: every file matching a list of names and globs, each
 * with its own network where one is given (by default the agent chains the
 * file the runtime uses, which runtime_file.ts picks by the runtime's rule).
 * Pure.
 */
import { GIVE_ANNOTATED_NAME, networkNameProblem } from "../../probe/network_name.ts";
import { isConfigName } from "./conflist.ts";

/** One configured file pattern: a name or a glob (`*`, `?`), with an optional network. */
export interface ChainTarget {
  pattern: string;
  network?: string;
  networkId?: number;
}

/** A file to chain and the network its `lace` entry names, if any. */
export interface Selected {
  name: string;
  network?: string;
  networkId?: number;
  /** The runtime that uses the file, when its rule picked it (runtime_file.ts). */
  usedBy?: string;
}

/** Names compared as Go's sort.Strings does (bytewise). */
export function byteOrder(a: string, b: string): number {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
    if (ea[i] !== eb[i]) return ea[i] - eb[i];
  }
  return ea.length - eb.length;
}

/**
 * Parses `--cni-chain-files`: comma-separated `PATTERN` or `PATTERN=NETWORK:ID`
 * (e.g. `10-flannel.conflist,20-*.conflist=blue:7`), NETWORK held to the network name rule
 * (lib/probe/network_name.ts). Throws TypeError naming every bad item.
 */
export function parseChainTargets(text: string): ChainTarget[] {
  const targets: ChainTarget[] = [];
  const problems: string[] = [];
  for (const item of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const [pattern, network, ...extra] = item.split("=");
    if (extra.length > 0 || pattern === "" || pattern.includes("/")) {
      problems.push(`"${item}" is not PATTERN or PATTERN=NETWORK:ID (a file name, no "/")`);
      continue;
    }
    if (network === undefined) {
      targets.push({ pattern });
      continue;
    }
    // The id follows the last colon; the name is held to the rule of every network name.
    const m = /^(.*):([0-9]{1,5})$/s.exec(network);
    const id = m ? Number(m[2]) : NaN;
    if (!m || id < 1 || id > 65535) {
      problems.push(`"${item}": the network must be NAME:ID with ID 1..65535`);
      continue;
    }
    const bad = networkNameProblem(m[1]);
    if (bad) {
      problems.push(
        `"${item}": the network name ${bad}; ${GIVE_ANNOTATED_NAME}`,
      );
      continue;
    }
    targets.push({ pattern, network: m[1], networkId: id });
  }
  if (problems.length > 0) throw new TypeError(problems.join("; "));
  return targets;
}

/** True when `name` matches the glob `pattern` (`*` any run, `?` one character). */
export function globMatch(pattern: string, name: string): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(
    /\?/g,
    ".",
  );
  return new RegExp(`^${re}$`, "s").test(name);
}

/**
 * The files to chain among the directory's `names`: each configuration file
 * matching a target (the first matching target gives its network), in byte order.
 */
export function selectFiles(names: string[], targets: ChainTarget[]): Selected[] {
  const configs = names.filter(isConfigName).sort(byteOrder);
  const selected: Selected[] = [];
  for (const name of configs) {
    const target = targets.find((t) => globMatch(t.pattern, name));
    if (!target) continue;
    selected.push({
      name,
      ...(target.network !== undefined
        ? { network: target.network, networkId: target.networkId }
        : {}),
    });
  }
  return selected;
}
