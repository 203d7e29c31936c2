/**
 * The wire format between the CNI plugin and the agent: one JSON object per
 * line over a unix socket, each request with an id that its reply repeats.
 * Pure code shared by both ends; the server validates every request with
 * `parseRequest` because anything can connect to a socket.
 */
import { isObject, jsonText } from "../text/json.ts";
import { networkNameProblem } from "../probe/network_name.ts";

/**
 * Where the agent listens for the plugin and where the plugin calls it by
 * default: the agent's Config and the plugin's network configuration both
 * default to it.
 */
export const DEFAULT_CNI_SOCKET = "/run/lace/cni.sock";

/**
 * Where the agent pins its links and maps unless told otherwise, and where the plugin looks for
 * the probe map when the agent does not answer: the agent's Config and the plugin's network
 * configuration both default to it.
 */
export const DEFAULT_PIN_PATH = "/sys/fs/bpf/lace";

export const PROTOCOL_VERSION = 1;
/** A request line longer than this is refused: requests are small. */
export const MAX_LINE_BYTES = 64 * 1024;

/**
 * What the CNI path learnt about a pod when it set up its network: what the
 * agent needs to register the pod's targets (AgentCore.registerAttachment).
 */
export interface Attachment {
  namespace: string;
  name: string;
  uid: string;
  ips: string[];
  network?: string;
  networkId?: number;
}

/** The runtime's name for one attachment: container (sandbox) id and interface. */
export interface AttachmentRef {
  containerId: string;
  ifname: string;
}

/**
 * The agent refuses an attachment on purpose (an address of another network):
 * the plugin fails the ADD instead of failing open. Thrown by the agent core,
 * turned into a reply with `refused: true` by the server.
 */
export class AttachmentRefusedError extends Error {
  override name = "AttachmentRefusedError";
  readonly refused = true;
}

export type Request =
  & { v: number; id: string }
  & (
    | { op: "add"; ref: AttachmentRef; attachment: Attachment }
    | { op: "check"; ref: AttachmentRef; attachment: Attachment }
    | { op: "del"; ref: AttachmentRef; uid?: string }
    | { op: "gc"; valid: AttachmentRef[] }
  );

export type Reply =
  | { v: number; id: string; ok: true; problems?: string[] }
  | {
    v: number;
    id: string | null;
    ok: false;
    error: string;
    retry?: boolean;
    /** The agent refuses the attachment on purpose: the plugin fails the ADD. */
    refused?: boolean;
  };

function text(obj: Record<string, unknown>, key: string, where: string, optional = false) {
  const value = obj[key];
  if (optional && value === undefined) return undefined;
  if (typeof value !== "string" || value === "" || value.length > 1024) {
    throw new TypeError(`${where}.${key} must be a non-empty string of at most 1024 characters`);
  }
  return value;
}

function parseRef(value: unknown, where: string): AttachmentRef {
  if (!isObject(value)) throw new TypeError(`${where} must be an object`);
  return {
    containerId: text(value, "containerId", where)!,
    ifname: text(value, "ifname", where)!,
  };
}

function parseAttachment(value: unknown): Attachment {
  if (!isObject(value)) throw new TypeError("attachment must be an object");
  const where = "attachment";
  const a: Attachment = {
    namespace: text(value, "namespace", where)!,
    name: text(value, "name", where)!,
    uid: text(value, "uid", where)!,
    ips: [],
  };
  if (!Array.isArray(value.ips) || value.ips.length > 64) {
    throw new TypeError("attachment.ips must be a list of at most 64 addresses");
  }
  for (const ip of value.ips) {
    if (typeof ip !== "string" || ip.length > 64) {
      throw new TypeError(`attachment.ips holds something that is not an address: ${jsonText(ip)}`);
    }
    a.ips.push(ip);
  }
  if (value.network !== undefined || value.networkId !== undefined) {
    const bad = networkNameProblem(value.network);
    if (bad) throw new TypeError(`attachment.network ${bad}`);
    a.network = value.network as string;
    const id = value.networkId;
    if (typeof id !== "number" || !Number.isInteger(id) || id < 1 || id > 65535) {
      throw new TypeError(`attachment.networkId must be an integer 1..65535: ${jsonText(id)}`);
    }
    a.networkId = id;
  }
  return a;
}

/**
 * Decodes and validates one request line. Throws TypeError saying what is
 * wrong; `requestId` recovers the id of a bad request for the error reply.
 */
export function parseRequest(line: string): Request {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw new TypeError("Request is not valid JSON");
  }
  if (!isObject(raw)) throw new TypeError("Request is not a JSON object");
  if (raw.v !== PROTOCOL_VERSION) {
    throw new TypeError(
      `Unsupported protocol version ${jsonText(raw.v)}: this agent speaks ${PROTOCOL_VERSION}`,
    );
  }
  const id = text(raw, "id", "request")!;
  const v = PROTOCOL_VERSION;
  switch (raw.op) {
    case "add":
    case "check":
      return {
        v,
        id,
        op: raw.op,
        ref: parseRef(raw.ref, "ref"),
        attachment: parseAttachment(raw.attachment),
      };
    case "del":
      return {
        v,
        id,
        op: "del",
        ref: parseRef(raw.ref, "ref"),
        uid: text(raw, "uid", "request", true),
      };
    case "gc": {
      if (!Array.isArray(raw.valid) || raw.valid.length > 100_000) {
        throw new TypeError("valid must be a list of attachments");
      }
      return { v, id, op: "gc", valid: raw.valid.map((r, i) => parseRef(r, `valid[${i}]`)) };
    }
    default:
      throw new TypeError(`Unknown op ${jsonText(raw.op)}: expected add, check, del or gc`);
  }
}

/** The id of a request that failed validation, when it has a usable one. */
export function requestId(line: string): string | null {
  try {
    const raw = JSON.parse(line);
    return isObject(raw) && typeof raw.id === "string" ? raw.id : null;
  } catch {
    return null;
  }
}

/** Decodes a reply line on the plugin side; throws TypeError when it is not one. */
export function parseReply(line: string): Reply {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw new TypeError("Agent reply is not valid JSON");
  }
  if (!isObject(raw) || typeof raw.ok !== "boolean") {
    throw new TypeError("Agent reply has no ok field");
  }
  if (raw.ok) {
    const problems = Array.isArray(raw.problems) ? raw.problems.map(String) : undefined;
    return { v: Number(raw.v), id: String(raw.id), ok: true, problems };
  }
  return {
    v: Number(raw.v),
    id: typeof raw.id === "string" ? raw.id : null,
    ok: false,
    error: typeof raw.error === "string" ? raw.error : "Unknown agent error",
    retry: raw.retry === true,
    ...(raw.refused === true ? { refused: true } : {}),
  };
}

/** Key of an attachment reference in the agent's table. */
export function refKey(ref: AttachmentRef): string {
  return `${ref.containerId}/${ref.ifname}`;
}
