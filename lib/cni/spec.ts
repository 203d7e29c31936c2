/**
 * The CNI specification as far as Lace's chained plugin needs it: versions,
 * error codes, the environment, the network configuration on stdin, and the
 * result that is passed through. Pure code: no I/O, so every rule and every
 * error code is unit-tested, and the plugin path imports nothing heavy.
 */
import { parseDuration } from "../duration.ts";
import { isObject, jsonText } from "../json.ts";
import { GIVE_ANNOTATED_NAME, networkNameProblem } from "../network_name.ts";
import { DEFAULT_CNI_SOCKET } from "./protocol.ts";

/** The spec versions this plugin speaks; results before 0.3.0 had another shape. */
export const SUPPORTED_VERSIONS = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;

/** Well-known error codes (CNI spec, "Error" section); 100 and up are Lace's own. */
export const ERR = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  /** CHECK: the agent's probe map does not hold what this attachment needs. */
  targetsMismatch: 100,
  /** ADD: a pod of another network holds one of the attachment's addresses on this node. */
  addressConflict: 101,
  /** Anything unexpected inside the plugin itself. */
  internal: 999,
} as const;

/** A failure reported to the runtime as a CNI error result. */
export class CniError extends Error {
  override name = "CniError";
  constructor(readonly code: number, message: string, readonly details = "") {
    super(message);
  }
}

export type Command = "ADD" | "DEL" | "CHECK" | "VERSION" | "GC" | "STATUS";
const COMMANDS: readonly Command[] = ["ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS"];

/** The oldest spec version that has each command. */
const SINCE: Record<Command, string> = {
  ADD: "0.1.0",
  DEL: "0.1.0",
  VERSION: "0.1.0",
  CHECK: "0.4.0",
  GC: "1.1.0",
  STATUS: "1.1.0",
};

/** Compares two dotted versions numerically; NaN parts compare as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] || 0) - (pb[i] || 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function isSupportedVersion(version: string): boolean {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(version);
}

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

/** The network configuration from stdin, with Lace's keys and their defaults. */
export interface NetConf {
  cniVersion: string;
  name: string;
  type: string;
  prevResult?: Record<string, unknown>;
  /** The overlay network of every pod on this attachment; absent: the pod annotations decide. */
  network?: string;
  networkId?: number;
  /** The agent's unix socket. */
  socket: string;
  /** How long ADD, DEL and CHECK wait for the agent, in milliseconds. */
  timeoutMs: number;
}

const DEFAULT_TIMEOUT_MS = 1000;
/** A chained plugin must never hold a pod's sandbox for long. */
const MAX_TIMEOUT_MS = 30_000;

/**
 * The configured timeout in ms, read as Go's time.ParseDuration reads it (CNI
 * configurations are written for Go plugins): NaN when it is not a duration
 * string at all; a well-formed one outside the supported range is returned
 * as is, for the caller to refuse as unsupported rather than invalid.
 * Surrounding spaces are allowed, unlike in Go: the plugin always allowed
 * them, and a configuration refused after an upgrade would block pods.
 */
function timeoutOf(value: unknown): number {
  if (typeof value !== "string") return NaN;
  try {
    return parseDuration(value.trim());
  } catch {
    return NaN;
  }
}

/** The cniVersion of a configuration that may be invalid otherwise; "" if there is none. */
export function peekVersion(stdin: string): string {
  try {
    const conf = JSON.parse(stdin);
    return isObject(conf) && typeof conf.cniVersion === "string" ? conf.cniVersion : "";
  } catch {
    return "";
  }
}

/**
 * Decodes and validates the network configuration for a command. The version
 * must be one this plugin speaks and have the command (code 1); undecodable
 * JSON is code 6, a wrong key code 7, a key whose value is well formed but not
 * supported code 2. Keys Lace does not know are ignored: a conflist carries
 * runtimeConfig, capabilities and args for other plugins too.
 */
export function parseNetConf(stdin: string, command: Command): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (e) {
    throw new CniError(
      ERR.decodeFailure,
      "Network configuration on stdin is not valid JSON",
      (e as Error).message,
    );
  }
  if (!isObject(raw)) {
    throw new CniError(ERR.decodeFailure, "Network configuration on stdin is not a JSON object");
  }
  if (typeof raw.cniVersion !== "string" || raw.cniVersion === "") {
    throw new CniError(ERR.invalidConfig, "Network configuration has no cniVersion string");
  }
  const cniVersion = raw.cniVersion;
  if (!isSupportedVersion(cniVersion)) {
    throw new CniError(
      ERR.incompatibleVersion,
      `Incompatible CNI version "${cniVersion}": Lace's plugin supports ${
        SUPPORTED_VERSIONS.join(", ")
      }`,
    );
  }
  if (compareVersions(cniVersion, SINCE[command]) < 0) {
    throw new CniError(
      ERR.incompatibleVersion,
      `CNI version "${cniVersion}" has no ${command} command (it needs ${SINCE[command]} or later)`,
    );
  }
  const invalid = (message: string) => new CniError(ERR.invalidConfig, message);
  if (typeof raw.name !== "string" || raw.name === "") {
    throw invalid(`Network configuration has no "name" string`);
  }
  if (typeof raw.type !== "string" || raw.type === "") {
    throw invalid(`Network configuration has no "type" string`);
  }
  const conf: NetConf = {
    cniVersion,
    name: raw.name,
    type: raw.type,
    socket: DEFAULT_CNI_SOCKET,
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
  if (raw.prevResult !== undefined && raw.prevResult !== null) {
    if (!isObject(raw.prevResult)) throw invalid(`"prevResult" must be an object`);
    conf.prevResult = raw.prevResult;
  }
  if (raw.network !== undefined || raw.networkId !== undefined) {
    try {
      Object.assign(conf, networkOf(raw));
    } catch (e) {
      // Fail closed at ADD and CHECK: a pod is never tagged into a network nobody can name.
      // DEL, GC and STATUS use no network: a configuration gone bad, in any of these keys, must
      // not hold up a sandbox's removal, so they go on without it.
      if (command === "ADD" || command === "CHECK") throw e;
    }
  }
  if (raw.socket !== undefined) {
    if (typeof raw.socket !== "string" || !raw.socket.startsWith("/")) {
      throw invalid(`"socket" must be an absolute path: ${jsonText(raw.socket)}`);
    }
    conf.socket = raw.socket;
  }
  if (raw.timeout !== undefined) {
    const ms = timeoutOf(raw.timeout);
    if (Number.isNaN(ms)) {
      throw invalid(
        `"timeout" must be a duration such as "1s" or "500ms": ${jsonText(raw.timeout)}`,
      );
    }
    if (ms < 1 || ms > MAX_TIMEOUT_MS) {
      throw new CniError(
        ERR.unsupportedField,
        `Unsupported value of "timeout": ${jsonText(raw.timeout)} (supported: 1ms..30s)`,
      );
    }
    conf.timeoutMs = ms;
  }
  return conf;
}

/**
 * The conf's `network` and `networkId`, both present and well formed (the name held to the rule
 * of every network name, lib/network_name.ts), else a CniError saying which key to fix.
 */
function networkOf(raw: Record<string, unknown>): { network: string; networkId: number } {
  const invalid = (message: string) => new CniError(ERR.invalidConfig, message);
  if (typeof raw.network !== "string" || raw.network === "") {
    throw invalid(`"network" must be a non-empty string when "networkId" is set`);
  }
  const id = raw.networkId;
  const networkId = typeof id === "number"
    ? id
    : typeof id === "string" && /^[0-9]{1,5}$/.test(id)
    ? Number(id)
    : NaN;
  if (!Number.isInteger(networkId)) {
    throw invalid(`"networkId" must be an integer 1..65535 when "network" is set: ${jsonText(id)}`);
  }
  if (networkId < 1 || networkId > 65535) {
    throw new CniError(
      ERR.unsupportedField,
      `Unsupported value of "networkId": ${jsonText(id)} (network ids are 1..65535)`,
    );
  }
  const bad = networkNameProblem(raw.network);
  if (bad) {
    throw invalid(
      `"network" ${bad}: ${GIVE_ANNOTATED_NAME}`,
    );
  }
  return { network: raw.network, networkId };
}

/**
 * The pod's own addresses in a prevResult: every `ips[].address` (CIDR) whose
 * interface, when named, is inside the sandbox. Host-side interfaces (a veth's
 * host end) carry no `sandbox` and are left out. Throws code 7 on a malformed
 * result, because a plugin that cannot read its input must not guess.
 */
export function resultAddresses(result: Record<string, unknown>): string[] {
  const ips = result.ips ?? [];
  const interfaces = Array.isArray(result.interfaces) ? result.interfaces : [];
  if (!Array.isArray(ips)) throw new CniError(ERR.invalidConfig, `"prevResult.ips" is not a list`);
  const out: string[] = [];
  for (const ip of ips) {
    if (!isObject(ip) || typeof ip.address !== "string") {
      throw new CniError(
        ERR.invalidConfig,
        `"prevResult.ips" holds an entry without an address: ${jsonText(ip)}`,
      );
    }
    if (typeof ip.interface === "number") {
      const iface = interfaces[ip.interface];
      if (isObject(iface) && !iface.sandbox) continue;
    }
    const address = ip.address.split("/")[0];
    if (!/^[0-9a-fA-F:.]+$/.test(address)) {
      throw new CniError(
        ERR.invalidConfig,
        `"prevResult.ips" holds an address that is not an IP address: "${ip.address}"`,
      );
    }
    if (!out.includes(address)) out.push(address);
  }
  return out;
}

/**
 * Returns the result to print for ADD: prevResult unchanged when it already is
 * in the configuration's version (the normal case: the runtime converts it
 * before chaining), else converted. Between 0.3.0 and 1.1.0 the only change is
 * `ips[].version`, present before 1.0.0 and removed in it.
 */
export function passThrough(
  prevResult: Record<string, unknown>,
  cniVersion: string,
): Record<string, unknown> {
  const from = typeof prevResult.cniVersion === "string" ? prevResult.cniVersion : cniVersion;
  if (from === cniVersion) {
    return prevResult.cniVersion === undefined ? { cniVersion, ...prevResult } : prevResult;
  }
  const out: Record<string, unknown> = { ...prevResult, cniVersion };
  if (Array.isArray(prevResult.ips)) {
    const modern = compareVersions(cniVersion, "1.0.0") >= 0;
    out.ips = prevResult.ips.map((ip) => {
      if (!isObject(ip)) return ip;
      const { version: _drop, ...rest } = ip;
      if (modern) return rest;
      const address = typeof ip.address === "string" ? ip.address : "";
      return { ...rest, version: address.includes(":") ? "6" : "4" };
    });
  }
  return out;
}

/** The error result the spec defines, in the configuration's version when it is known. */
export function errorResult(err: CniError, cniVersion: string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    cniVersion: isSupportedVersion(cniVersion) ? cniVersion : "1.0.0",
    code: err.code,
    msg: err.message,
  };
  if (err.details) out.details = err.details;
  return out;
}

/** The VERSION result: the asked version when supported, else the newest. */
export function versionResult(asked: string): Record<string, unknown> {
  return {
    cniVersion: isSupportedVersion(asked) ? asked : SUPPORTED_VERSIONS.at(-1),
    supportedVersions: [...SUPPORTED_VERSIONS],
  };
}
