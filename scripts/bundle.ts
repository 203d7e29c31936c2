/**
 * `deno task bundle`: builds the Kubernetes client's bundle, lib/kube/client_node.bundle.js, from
 * lib/kube/client_node.ts with `deno bundle` (esbuild: tree-shaken, minified, names kept), and
 * keeps its record, lib/kube/client_node.bundle.json (lib/kube/bundle_record.ts): the sha256 of
 * the entry, of the lockfile, the Deno version, and of the bundle they build.
 *
 *   deno task bundle [--output PATH] [--record PATH]
 *
 * It always builds (about 2.5 s here), so what is there is never trusted for what it says of
 * itself, and replaces the bundle only when the bytes differ. When the record was made from
 * today's inputs, the build must reproduce it, or this fails without replacing either (a record
 * changed by hand, or a build that is not reproducible). When the inputs changed, the record is
 * written anew: commit it. lib/kube/k8s.ts loads the bundle
 * only when the record vouches for it, and client-node's modules otherwise.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  bundleInputs,
  type BundleRecord,
  formatBundleRecord,
  parseBundleRecord,
  recordInputsProblem,
  sha256Hex,
} from "../lib/kube/bundle_record.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY = "lib/kube/client_node.ts";
/** Where lib/kube/k8s.ts looks for the bundle (relative to the repository). */
export const CLIENT_NODE_BUNDLE = "lib/kube/client_node.bundle.js";
/** Where lib/kube/k8s.ts looks for the bundle's record (relative to the repository, tracked). */
export const CLIENT_NODE_BUNDLE_RECORD = "lib/kube/client_node.bundle.json";
const HEADER = "// lace client-node bundle: deno task bundle builds it, " +
  "lib/kube/k8s.ts checks it against client_node.bundle.json";
/**
 * undici and other CommonJS parts of client-node call require() for Node's built-ins; esbuild's
 * shim for it throws "Dynamic require of ... is not supported" unless a `require` is in scope.
 */
const REQUIRE_SHIM = 'import { createRequire as __laceCreateRequire } from "node:module";\n' +
  "const require = __laceCreateRequire(import.meta.url);";

/** What a bundle run was asked for. */
export interface BundleOptions {
  output: string;
  record: string;
}

/** Parses this script's arguments; throws TypeError naming the bad argument. */
export function parseBundleArgs(args: string[]): BundleOptions {
  const options: BundleOptions = {
    output: CLIENT_NODE_BUNDLE,
    record: CLIENT_NODE_BUNDLE_RECORD,
  };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--output" || flag === "--record") {
      const value = inline ?? args[++i];
      if (!value) throw new TypeError(`Missing value for ${flag}`);
      options[flag === "--output" ? "output" : "record"] = value;
    } else {
      throw new TypeError(
        `Unknown argument "${args[i]}": use --output PATH or --record PATH`,
      );
    }
  }
  return options;
}

/** What a bundle run did: replaced the bundle (its bytes changed), and wrote a new record. */
export interface BundleOutcome {
  built: boolean;
  recorded: boolean;
  record: BundleRecord;
}

function readOptional(path: string): Uint8Array | undefined {
  try {
    return Deno.readFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** The record at `path`, or undefined when there is none; throws naming what is wrong with it. */
function readRecord(path: string): BundleRecord | undefined {
  const bytes = readOptional(path);
  if (bytes === undefined) return undefined;
  try {
    return parseBundleRecord(JSON.parse(new TextDecoder().decode(bytes)));
  } catch (e) {
    throw new Error(
      `${path} is not a valid bundle record (${(e as Error).message}): restore it from git, ` +
        "or remove it to record a new build",
    );
  }
}

/**
 * Builds the bundle, replaces the one there when the bytes differ, and keeps the record (see the
 * file's comment). Throws when a build from a record's own inputs does not reproduce it.
 */
export async function buildBundle(options: BundleOptions): Promise<BundleOutcome> {
  const output = resolve(ROOT, options.output);
  const recordPath = resolve(ROOT, options.record);
  const inputs = bundleInputs(
    Deno.readFileSync(join(ROOT, ENTRY)),
    Deno.readFileSync(join(ROOT, "deno.lock")),
    Deno.version.deno,
  );
  const old = readRecord(recordPath);
  const current = old !== undefined && recordInputsProblem(old, inputs) === undefined;
  const temp = `${output}.${Deno.pid}.tmp.js`;
  try {
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "deno",
        "--minify",
        // Error and class names stay readable in logs and stack traces.
        "--keep-names",
        "--output",
        temp,
        ENTRY,
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!result.success) {
      const text = new TextDecoder().decode(result.stderr).trim();
      throw new Error(`deno bundle of ${ENTRY} failed (exit ${result.code}): ${text}`);
    }
    const body = Deno.readTextFileSync(temp);
    const bytes = new TextEncoder().encode(`${HEADER}\n${REQUIRE_SHIM}\n${body}`);
    const record: BundleRecord = { ...inputs, bundle: sha256Hex(bytes) };
    if (current && record.bundle !== old.bundle) {
      throw new Error(
        `a build from the inputs ${options.record} names has sha256 ${record.bundle}, the ` +
          `record says ${old.bundle}: the record was changed (see git diff ${options.record}) ` +
          "or the build is not reproducible; neither file was replaced",
      );
    }
    const existing = readOptional(output);
    const same = existing !== undefined && sha256Hex(existing) === record.bundle;
    if (!same) {
      Deno.writeFileSync(temp, bytes);
      Deno.renameSync(temp, output);
    }
    if (!current) {
      const recordTemp = `${recordPath}.${Deno.pid}.tmp`;
      Deno.writeTextFileSync(recordTemp, formatBundleRecord(record));
      Deno.renameSync(recordTemp, recordPath);
    }
    return { built: !same, recorded: !current, record };
  } finally {
    try {
      Deno.removeSync(temp);
    } catch {
      // Renamed into place, or never written.
    }
  }
}

if (import.meta.main) {
  try {
    const options = parseBundleArgs(Deno.args);
    const { built, recorded } = await buildBundle(options);
    const size = Deno.statSync(resolve(ROOT, options.output)).size;
    console.error(
      `${built ? "built" : "up to date:"} ${options.output} (${(size / 1048576).toFixed(1)} MiB)` +
        (recorded ? `; recorded its inputs and sha256 in ${options.record}: commit it` : ""),
    );
  } catch (e) {
    console.error(`bundle: ${e instanceof Error ? e.message : e}`);
    Deno.exit(e instanceof TypeError ? 2 : 1);
  }
}
