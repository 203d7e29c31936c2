/**
 * The record that vouches for the Kubernetes client's bundle (lib/kube/client_node.bundle.js):
 * what it is built from (the entry, the lockfile, the Deno version, by sha256) and the sha256 of
 * what that build gives. `deno task bundle` writes it to lib/kube/client_node.bundle.json, which
 * is tracked by git; the bundle itself is a git-ignored build output. The build is reproducible
 * (the same inputs give the same bytes, checked by scripts/bundle_test.ts), so the lockfile
 * decides what the bundle is: a bundle is used only when its bytes hash to the record and the
 * record was made from the inputs in front of it. Whoever could swap the bundle must also change
 * a tracked file, in view of `git diff` and of the build, which refuses a record its own build
 * from the same inputs does not reproduce. Pure: no I/O.
 */
import { createHash } from "node:crypto";

/** What the bundle is built from: the Deno version and sha256 (hex) of the entry and lockfile. */
export interface BundleInputs {
  deno: string;
  entry: string;
  lockfile: string;
}

/** The inputs and the sha256 (hex) of the bundle they build. */
export interface BundleRecord extends BundleInputs {
  bundle: string;
}

/** sha256 of `data`, lowercase hex. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The inputs a bundle built from this entry and lockfile by this Deno version has. */
export function bundleInputs(
  entry: string | Uint8Array,
  lockfile: string | Uint8Array,
  deno: string,
): BundleInputs {
  return { deno, entry: sha256Hex(entry), lockfile: sha256Hex(lockfile) };
}

const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** Reads a record from parsed JSON; throws TypeError naming the first field that is wrong. */
export function parseBundleRecord(value: unknown): BundleRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError("The bundle record is not a JSON object");
  }
  const fields = value as Record<string, unknown>;
  if (typeof fields.deno !== "string" || !/^\d+\.\d+\.\d+\S*$/.test(fields.deno)) {
    throw new TypeError(`The bundle record's "deno" is not a Deno version: ${String(fields.deno)}`);
  }
  for (const key of ["entry", "lockfile", "bundle"] as const) {
    if (typeof fields[key] !== "string" || !HEX_SHA256.test(fields[key] as string)) {
      throw new TypeError(`The bundle record's "${key}" is not a sha256 in hex`);
    }
  }
  return {
    deno: fields.deno,
    entry: fields.entry as string,
    lockfile: fields.lockfile as string,
    bundle: fields.bundle as string,
  };
}

/**
 * Why `record` does not vouch for a bundle built from `inputs` (each input that differs, named),
 * or undefined when it does. An input left out of `inputs` is not compared: a compiled binary
 * carries neither the entry nor the lockfile, which `deno task compile` compared when it embedded
 * the bundle.
 */
export function recordInputsProblem(
  record: BundleInputs,
  inputs: Partial<BundleInputs>,
): string | undefined {
  const differ: string[] = [];
  if (inputs.deno !== undefined && inputs.deno !== record.deno) {
    differ.push(`Deno ${inputs.deno}, not ${record.deno}`);
  }
  if (inputs.entry !== undefined && inputs.entry !== record.entry) differ.push("the entry");
  if (inputs.lockfile !== undefined && inputs.lockfile !== record.lockfile) {
    differ.push("the lockfile");
  }
  return differ.length === 0 ? undefined : `made from other inputs (${differ.join(", ")})`;
}

/** The record's text as `deno task bundle` writes it (deno fmt's JSON layout). */
export function formatBundleRecord(record: BundleRecord): string {
  const { deno, entry, lockfile, bundle } = record;
  return `${JSON.stringify({ deno, entry, lockfile, bundle }, null, 2)}\n`;
}
