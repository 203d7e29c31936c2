/**
 * The CNI specification as far as Lace's chained plugin needs it: versions, commands, error
 * codes and the error and VERSION results; the environment is spec_env.ts, the network
 * configuration on stdin spec_netconf.ts, the result passed through spec_result.ts. Pure code:
 * no I/O, so every rule and every error code is unit-tested, and the plugin path imports
 * nothing heavy.
 */

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
export const COMMANDS: readonly Command[] = ["ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS"];

/** The oldest spec version that has each command. */
export const SINCE: Record<Command, string> = {
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

/** Whether this plugin speaks `version`. */
export function isSupportedVersion(version: string): boolean {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(version);
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
