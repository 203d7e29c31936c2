/**
 * `deno task bundle`: builds the Kubernetes client's bundle, lib/kube/client_node.bundle.js, from
 * lib/kube/client_node.ts with `deno bundle` (esbuild: tree-shaken, minified, names kept).
 *
 *   deno task bundle [--output PATH] [--force]
 *
 * The first line of the bundle records a hash of what it was built from (the entry, the
 * lockfile, the Deno version); a bundle whose hash matches is left as it is, so set-up can run
 * this every time. lib/kube/k8s.ts loads the bundle, and client-node's modules when it is absent.
 */
import { createHash } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY = "lib/kube/client_node.ts";
/** Where lib/kube/k8s.ts looks for the bundle (relative to the repository). */
export const CLIENT_NODE_BUNDLE = "lib/kube/client_node.bundle.js";
const HEADER = "// lace client-node bundle ";
/**
 * undici and other CommonJS parts of client-node call require() for Node's built-ins; esbuild's
 * shim for it throws "Dynamic require of ... is not supported" unless a `require` is in scope.
 */
const REQUIRE_SHIM = 'import { createRequire as __laceCreateRequire } from "node:module";\n' +
  "const require = __laceCreateRequire(import.meta.url);";

/** What a bundle run was asked for. */
export interface BundleOptions {
  output: string;
  force: boolean;
}

/** Parses this script's arguments; throws TypeError naming the bad argument. */
export function parseBundleArgs(args: string[]): BundleOptions {
  const options: BundleOptions = { output: CLIENT_NODE_BUNDLE, force: false };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--force" && inline === undefined) {
      options.force = true;
    } else if (flag === "--output") {
      const value = inline ?? args[++i];
      if (!value) throw new TypeError("Missing value for --output");
      options.output = value;
    } else {
      throw new TypeError(`Unknown argument "${args[i]}": use --output PATH or --force`);
    }
  }
  return options;
}

/** The first line a bundle built from these inputs carries. */
export function bundleHeader(entry: string, lockfile: string, denoVersion: string): string {
  const hash = createHash("sha256").update(entry).update("\0").update(lockfile).update("\0")
    .update(denoVersion).digest("hex");
  return `${HEADER}${hash}`;
}

function readFirstLine(path: string): string | undefined {
  try {
    const text = Deno.readTextFileSync(path);
    return text.slice(0, text.indexOf("\n"));
  } catch {
    return undefined;
  }
}

/** Builds the bundle unless one from the same inputs is there; returns whether it built one. */
export async function buildBundle(options: BundleOptions): Promise<boolean> {
  const output = resolve(ROOT, options.output);
  const header = bundleHeader(
    Deno.readTextFileSync(join(ROOT, ENTRY)),
    Deno.readTextFileSync(join(ROOT, "deno.lock")),
    Deno.version.deno,
  );
  if (!options.force && readFirstLine(output) === header) return false;
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
    Deno.writeTextFileSync(temp, `${header}\n${REQUIRE_SHIM}\n${body}`);
    Deno.renameSync(temp, output);
    return true;
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
    const built = await buildBundle(options);
    const size = Deno.statSync(resolve(ROOT, options.output)).size;
    console.error(
      `${built ? "built" : "up to date:"} ${options.output} (${(size / 1048576).toFixed(1)} MiB)`,
    );
  } catch (e) {
    console.error(`bundle: ${e instanceof Error ? e.message : e}`);
    Deno.exit(e instanceof TypeError ? 2 : 1);
  }
}
