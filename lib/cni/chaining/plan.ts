/**
 * What to do with one configuration file, chaining or restoring it, decided
 * from its bytes and the record the agent kept when it chained it. The record
 * holds the file's bytes from before chaining, keyed by the hash of the bytes
 * the agent wrote, so that restoring gives back exactly those bytes when the
 * file is still what the agent wrote; a file another hand changed since is
 * restored by taking the agent's entry out of what is there now.
 */
import { createHash } from "node:crypto";
import { chainConfig, type LaceEntry, sameWithoutLace, unchainConfig } from "./conflist.ts";

/** What the agent remembers of one file it chained. */
export interface ChainRecord {
  /** The file's name as chained (a `.conf` became a `.conflist`). */
  file: string;
  /** The file's name before chaining. */
  originalName: string;
  /** The bytes before chaining, base64. */
  original: string;
  /** sha256 (hex) of the bytes the agent wrote. */
  chainedSha256: string;
}

export interface Report {
  level: "info" | "warning";
  /** The kind of outcome, for metrics and Events: one word. */
  reason:
    | "chained"
    | "unparsable"
    | "refused"
    | "hand-chained"
    | "restored"
    | "conflict"
    /** The pass itself failed (a read-only directory, no permission): retried. */
    | "failed"
    /** A directory or file someone other than root may change (or a symlink): not written. */
    | "unsafe"
    /** A record of the state file that is not the agent's data (a path, a damaged field). */
    | "bad-record"
    /** Another writer changed the file between every read and write of a pass. */
    | "raced"
    /** The runtime uses no file of the directory (none it can load): nothing to chain. */
    | "no-runtime-file"
    /** The lace plugin is missing from the runtime's CNI bin directory, or not root's alone. */
    | "no-plugin";
  message: string;
}

/** A report about one file of the directory. */
export interface FileReport extends Report {
  file: string;
}

/** The steps of a plan, in order: write, then remove, then keep the record. */
export interface Plan {
  write?: { name: string; bytes: Uint8Array };
  remove?: string;
  /** The record to keep under `record.file`; null forgets `forget`'s record; undefined: as is. */
  record?: ChainRecord | null;
  /** The record to forget (its `file`), when the plan drops or moves one. */
  forget?: string;
  report?: Report;
}

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function base64(bytes: Uint8Array): string {
  return btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
}

/** The original bytes of a record; throws TypeError on a damaged record. */
export function originalBytes(record: ChainRecord): Uint8Array {
  return Uint8Array.from(atob(record.original), (c) => c.charCodeAt(0));
}

export interface ChainInput {
  name: string;
  bytes: Uint8Array;
  /** The record kept for `name`, if any. */
  record?: ChainRecord;
  entry: LaceEntry;
  /** True when a file of this name exists and is not one the agent chained. */
  occupied(name: string): boolean;
}

/**
 * Chains one file: the write (and the removal of a converted `.conf`) and the
 * record that lets it be restored byte for byte. Nothing to do when the file
 * is what the agent wrote; a file the runtime could not load, a cniVersion the
 * plugin lacks and a hand-chained `lace` are left alone and reported.
 */
export function planChain(input: ChainInput): Plan {
  const { name, bytes, record, entry } = input;
  const current = sha256(bytes);
  const result = chainConfig(name, bytes, entry);
  switch (result.kind) {
    case "unparsable":
      return {
        report: {
          level: "warning",
          reason: "unparsable",
          message: `Not chaining: ${result.error}; the file is left as it is`,
        },
      };
    case "refused":
      return {
        report: { level: "warning", reason: "refused", message: `Not chaining: ${result.error}` },
      };
    case "hand-chained":
      return {
        ...(record ? { record: null, forget: record.file } : {}),
        report: {
          level: "info",
          reason: "hand-chained",
          message: `"${name}" already names the lace plugin (chained by hand): left as it is`,
        },
      };
    case "chained-already": {
      if (record && record.file === name && record.chainedSha256 === current) return {};
      // The agent's entry is there but the bytes are not the ones recorded: reformatted by
      // another writer, or the record was lost. Keep what restores best.
      const before = originalOf(name, bytes, record);
      return { record: { ...before, file: name, chainedSha256: current } };
    }
    case "write": {
      if (result.name !== name && input.occupied(result.name)) {
        return {
          report: {
            level: "warning",
            reason: "conflict",
            message:
              `Not chaining "${name}": it would become "${result.name}", which another writer owns`,
          },
        };
      }
      const before = originalOf(name, bytes, record);
      return {
        write: { name: result.name, bytes: result.bytes },
        ...(result.name !== name ? { remove: name } : {}),
        ...(record && record.file !== result.name ? { forget: record.file } : {}),
        record: { ...before, file: result.name, chainedSha256: sha256(result.bytes) },
        report: {
          level: "info",
          reason: "chained",
          message: result.name === name
            ? `Chained the lace plugin into "${name}"`
            : `Chained the lace plugin into "${name}", now "${result.name}" (a list)`,
        },
      };
    }
  }
}

/**
 * The bytes to restore for a file whose current bytes are `bytes`: the
 * record's when the file is still the chaining of them (whatever the entry's
 * settings or the formatting), else the file without the agent's entry.
 */
function originalOf(
  name: string,
  bytes: Uint8Array,
  record: ChainRecord | undefined,
): Pick<ChainRecord, "original" | "originalName"> {
  if (record) {
    try {
      const original = originalBytes(record);
      if (sameWithoutLace({ name, bytes }, { name: record.originalName, bytes: original })) {
        return { original: record.original, originalName: record.originalName };
      }
    } catch { /* a damaged record restores nothing */ }
  }
  const unchained = unchainConfig(name, bytes);
  return {
    original: base64(unchained.kind === "write" ? unchained.bytes : bytes),
    originalName: name,
  };
}

export interface RestoreInput {
  name: string;
  /** The file's bytes now, or null when it is gone. */
  bytes: Uint8Array | null;
  record?: ChainRecord;
  /** True when a file of this name exists. */
  exists(name: string): boolean;
}

/**
 * Takes the agent's `lace` entry out of one file: the recorded bytes, byte for
 * byte, under the recorded name when the file is still what the agent wrote;
 * otherwise the file as it is now without the agent's entry (reported, since it
 * cannot be byte-identical to a file nobody kept). A file without the agent's
 * entry, or that the runtime could not load, is left alone.
 */
export function planRestore(input: RestoreInput): Plan {
  const { name, bytes, record } = input;
  const forget = record ? { record: null, forget: record.file } : {};
  if (bytes === null) return forget;
  if (record && record.chainedSha256 === sha256(bytes)) {
    let original: Uint8Array;
    try {
      original = originalBytes(record);
    } catch {
      return { ...fallback(name, bytes), ...forget };
    }
    if (record.originalName !== name && input.exists(record.originalName)) {
      // The network plugin wrote its file again meanwhile: that one is the config now.
      return {
        remove: name,
        ...forget,
        report: restored(`Removed "${name}"; "${record.originalName}" was rewritten meanwhile`),
      };
    }
    return {
      write: { name: record.originalName, bytes: original },
      ...(record.originalName !== name ? { remove: name } : {}),
      ...forget,
      report: restored(
        record.originalName === name
          ? `Restored "${name}" as it was before chaining`
          : `Restored "${record.originalName}" as it was before chaining and removed "${name}"`,
      ),
    };
  }
  return { ...fallback(name, bytes), ...forget };
}

function fallback(name: string, bytes: Uint8Array): Plan {
  const result = unchainConfig(name, bytes);
  if (result.kind === "not-chained") return {};
  if (result.kind === "unparsable") {
    return {
      report: {
        level: "warning",
        reason: "unparsable",
        message: `Not restoring: ${result.error}; the file is left as it is`,
      },
    };
  }
  return {
    write: { name, bytes: result.bytes },
    report: {
      level: "warning",
      reason: "restored",
      message:
        `Took the lace plugin out of "${name}", which changed since it was chained: the rest is as it is now, not byte-identical to any earlier file`,
    },
  };
}

function restored(message: string): Report {
  return { level: "info", reason: "restored", message };
}
