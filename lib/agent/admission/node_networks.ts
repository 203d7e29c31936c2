/**
 * The networks the node attached its pods to, as the CNI path reported them,
 * kept in a root-only file beside the CNI socket (under /run: it lasts as
 * long as the pods' sandboxes, until the node reboots). Without it, a
 * restarted agent would know a pod's network only from its annotations again,
 * which the pod's author can write.
 */
import { getLogger } from "@logtape/logtape";
import { isObject } from "../../text/json.ts";
import { networkNameProblem } from "../../probe/network_name.ts";
import { rootDirProblem } from "../../os/root_dir.ts";
import type { PodNetwork } from "../../rules/pod_network.ts";

const log = getLogger(["lace", "agent"]);

/** Where the agent core keeps the node's networks between its runs. */
export interface NodeNetworkStore {
  load(): Map<string, PodNetwork>;
  save(networks: ReadonlyMap<string, PodNetwork>): void;
}

/**
 * Reads the file's text: `{"<uid>": {"network": "...", "networkId": N}}`.
 * Entries that are not well formed, or whose name breaks the network name rule
 * (lib/probe/network_name.ts), are left out and named in `problems`; the others are kept.
 */
export function parseNodeNetworks(
  text: string,
): { networks: Map<string, PodNetwork>; problems: string[] } {
  const networks = new Map<string, PodNetwork>();
  const problems: string[] = [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { networks, problems: [`not JSON: ${(error as Error).message}`] };
  }
  if (!isObject(raw)) return { networks, problems: ["not a JSON object"] };
  for (const [uid, value] of Object.entries(raw)) {
    const ok = uid !== "" && isObject(value) && typeof value.network === "string" &&
      Number.isInteger(value.networkId) &&
      (value.networkId as number) >= 1 && (value.networkId as number) <= 65535;
    if (!ok) {
      problems.push(`entry ${JSON.stringify(uid)} is not {network, networkId 1..65535}`);
      continue;
    }
    const bad = networkNameProblem(value.network);
    if (bad) {
      // Not from the CNI path of this agent, which refuses such a name: left out, so the pod's
      // network comes from its annotations until its sandbox's next CNI ADD.
      problems.push(
        `entry ${
          JSON.stringify(uid)
        }: the network ${bad}; left out (the pod's network comes from its annotations until its next CNI ADD)`,
      );
      continue;
    }
    const v = value as unknown as PodNetwork;
    networks.set(uid, { network: v.network, networkId: v.networkId });
  }
  return { networks, problems };
}

/**
 * A NodeNetworkStore in the file at `path`, written 0600 through a temporary
 * file and a rename, so a reader never sees half of it; its directory is
 * created 0700 when missing, and read only when it is root's alone. A missing file is an empty store; a broken one
 * is logged and its good entries kept. A failed save is logged, never thrown:
 * the agent keeps working from memory.
 */
export function fileNodeNetworkStore(path: string): NodeNetworkStore {
  const dir = path.slice(0, Math.max(1, path.lastIndexOf("/")));
  return {
    load() {
      // A file others could have planted would choose pods' networks: read it only from a
      // directory that is root's alone (the CNI socket's, checked again when it listens).
      const unsafe = rootDirProblem(dir, "Directory of the node's pod networks");
      if (unsafe && !unsafe.tightenable) {
        log.error("Not reading the node's pod networks from {path}: {problem}", {
          path,
          problem: unsafe.problem,
        });
        return new Map();
      }
      let text: string;
      try {
        text = Deno.readTextFileSync(path);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) {
          log.warning("Cannot read the node's pod networks from {path}: {error}", {
            path,
            error: String(error),
          });
        }
        return new Map();
      }
      const { networks, problems } = parseNodeNetworks(text);
      for (const problem of problems) {
        log.warning("Ignored part of {path}: {problem}", { path, problem });
      }
      return networks;
    },
    save(networks) {
      const temp = `${path}.${Deno.pid}.tmp`;
      try {
        Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
        Deno.writeTextFileSync(temp, JSON.stringify(Object.fromEntries(networks)), {
          mode: 0o600,
        });
        Deno.renameSync(temp, path);
      } catch (error) {
        log.error("Cannot save the node's pod networks to {path}: {error}", {
          path,
          error: String(error),
        });
      }
    },
  };
}
