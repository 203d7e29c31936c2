/**
 * The CNI_* environment the runtime runs the plugin with (spec "Parameters"): the command and,
 * as it needs them, the container id, netns, interface and CNI_ARGS. Pure.
 */
import { CniError, type Command, COMMANDS, ERR } from "./spec.ts";

/** What the runtime put in the environment, validated for the command. */
export interface CniEnv {
  command: Command;
  containerId: string;
  netns: string;
  ifname: string;
  /** CNI_ARGS as key/value pairs (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID, ...). */
  args: Record<string, string>;
}

/**
 * Reads the CNI_* variables. Which ones are required depends on the command
 * (spec "Parameters"): ADD and CHECK need the container id, netns and ifname,
 * DEL the container id and ifname; VERSION, GC and STATUS need none. The
 * message names every invalid variable, as the spec asks for code 4.
 */
export function parseEnv(env: Record<string, string | undefined>): CniEnv {
  const raw = env.CNI_COMMAND ?? "";
  if (!(COMMANDS as readonly string[]).includes(raw)) {
    throw new CniError(
      ERR.invalidEnvironment,
      `Unknown CNI_COMMAND "${raw}": expected one of ${COMMANDS.join(", ")}`,
    );
  }
  const command = raw as Command;
  const required: string[] = command === "ADD" || command === "CHECK"
    ? ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]
    : command === "DEL"
    ? ["CNI_CONTAINERID", "CNI_IFNAME"]
    : [];
  const missing = required.filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new CniError(
      ERR.invalidEnvironment,
      `Missing environment variables for ${command}: ${missing.join(", ")}`,
    );
  }
  const ifname = env.CNI_IFNAME ?? "";
  if (ifname !== "" && !/^[^\s/:]{1,15}$/.test(ifname)) {
    throw new CniError(ERR.invalidEnvironment, `Invalid CNI_IFNAME "${ifname}"`);
  }
  return {
    command,
    containerId: env.CNI_CONTAINERID ?? "",
    netns: env.CNI_NETNS ?? "",
    ifname,
    args: parseCniArgs(env.CNI_ARGS ?? ""),
  };
}

/**
 * Parses CNI_ARGS ("K=V;K2=V2"). Keys Lace does not know are ignored, the
 * same as every runtime asks with IgnoreUnknown=1; a pair without "=" is an
 * invalid environment.
 */
export function parseCniArgs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (text.trim() === "") return out;
  for (const pair of text.split(";")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) {
      throw new CniError(
        ERR.invalidEnvironment,
        `Invalid CNI_ARGS pair "${pair}": expected KEY=VALUE pairs separated by ";"`,
      );
    }
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}
