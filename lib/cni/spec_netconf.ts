/**
 * The network configuration on the plugin's stdin: its version checked against the command,
 * Lace's keys (network, networkId, socket, timeout, pinPath) validated with their defaults, the keys of
 * other plugins ignored. Pure.
 */
import { parseDuration } from "../time/duration.ts";
import { isObject, jsonText } from "../text/json.ts";
import { GIVE_ANNOTATED_NAME, networkNameProblem } from "../probe/network_name.ts";
import { DEFAULT_CNI_SOCKET, DEFAULT_PIN_PATH } from "./protocol.ts";
import {
  CniError,
  type Command,
  compareVersions,
  ERR,
  isSupportedVersion,
  SINCE,
  SUPPORTED_VERSIONS,
} from "./spec.ts";

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
  /** The agent's pin path: an ADD the agent does not answer removes the entries there itself. */
  pinPath: string;
  /**
   * The agent's --address-sharing: under "shared" the networks at an address trust each other, so
   * an ADD no agent answers removes none of their entries there.
   */
  addressSharing: "exclusive" | "shared";
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
    pinPath: DEFAULT_PIN_PATH,
    addressSharing: "exclusive",
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
  if (raw.pinPath !== undefined) {
    if (typeof raw.pinPath !== "string" || !raw.pinPath.startsWith("/")) {
      throw invalid(`"pinPath" must be an absolute path: ${jsonText(raw.pinPath)}`);
    }
    conf.pinPath = raw.pinPath;
  }
  if (raw.addressSharing !== undefined) {
    if (raw.addressSharing !== "exclusive" && raw.addressSharing !== "shared") {
      throw invalid(
        `"addressSharing" must be "exclusive" or "shared": ${jsonText(raw.addressSharing)}`,
      );
    }
    conf.addressSharing = raw.addressSharing;
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
 * of every network name, lib/probe/network_name.ts), else a CniError saying which key to fix.
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
