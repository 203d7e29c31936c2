/**
 * `deno task compile`: builds the single `lace` binary with the BPF object and the Kubernetes
 * client's bundle (built each time and checked against its record, scripts/bundle.ts) embedded.
 *
 *   deno task compile [--output PATH] [--target TRIPLE]
 *
 * `deno compile` writes the program onto `denort`, Deno's runtime-only binary, which it downloads
 * for the running Deno version unless the DENORT_BIN environment variable names a local copy. No
 * package registry ships denort (npm's `deno` and `@deno/*`, PyPI's `deno` hold only the full CLI),
 * so an offline machine needs denort from a Deno release or a build of Deno's `denort` crate.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { v8FlagsArg } from "../lib/os/v8_flags.ts";
import { type BuildInfo, gitBuildInfo } from "../lib/version.ts";
import { buildBundle, CLIENT_NODE_BUNDLE, CLIENT_NODE_BUNDLE_RECORD } from "./bundle.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BPF_OBJECT = "bpf/lace.bpf.o";
const ENTRY = "main.ts";
const COMMANDS_MODULE = "lib/cli/commands.ts";
/** lib/version.ts's BUILD_INFO_FILE, written before compiling and removed after. */
const BUILD_INFO = "lib/build_info.json";
const PURGE_MODULE = "lib/datapath/address_purge.ts";

/** What a compile run needs: where to write and, optionally, the target triple. */
export interface CompileOptions {
  output: string;
  target?: string;
}

/** Parses this script's arguments; throws TypeError naming the bad argument. */
export function parseCompileArgs(args: string[]): CompileOptions {
  const options: CompileOptions = { output: "dist/lace" };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag !== "--output" && flag !== "--target") {
      throw new TypeError(`Unknown argument "${args[i]}": use --output PATH or --target TRIPLE`);
    }
    const value = inline ?? args[++i];
    if (!value) throw new TypeError(`Missing value for ${flag}`);
    if (flag === "--output") options.output = value;
    else options.target = value;
  }
  return options;
}

/**
 * The `deno compile` arguments: all permissions, Lace's V8 flags built in, the BPF object
 * embedded, main.ts as entry.
 */
export function compileCommandArgs(options: CompileOptions): string[] {
  return [
    "compile",
    "--allow-all",
    v8FlagsArg(),
    "--include",
    BPF_OBJECT,
    // main.ts imports it through a variable (so the CNI plugin's start skips its graph).
    "--include",
    COMMANDS_MODULE,
    // lib/cni/plugin.ts imports it through a variable too, only when the agent does not answer.
    "--include",
    PURGE_MODULE,
    // lib/kube/k8s.ts imports the Kubernetes client's bundle by a computed URL, after checking
    // its bytes against the record.
    "--include",
    CLIENT_NODE_BUNDLE,
    "--include",
    CLIENT_NODE_BUNDLE_RECORD,
    // lace version's commit and build date.
    "--include",
    BUILD_INFO,
    ...(options.target ? ["--target", options.target] : []),
    "--output",
    options.output,
    ENTRY,
  ];
}

/**
 * SOURCE_DATE_EPOCH (reproducible builds' variable) as a Date, or undefined when it is unset.
 * Throws a TypeError naming a value that is not whole seconds.
 */
export function sourceDateEpoch(env: Record<string, string | undefined>): Date | undefined {
  const epoch = env.SOURCE_DATE_EPOCH;
  if (!epoch) return undefined;
  if (!/^\d+$/.test(epoch)) {
    throw new TypeError(`SOURCE_DATE_EPOCH must be whole seconds since 1970: "${epoch}"`);
  }
  return new Date(Number(epoch) * 1000);
}

/**
 * The facts `lace version` shows of this build: the commit from LACE_BUILD_COMMIT (a build
 * without the checkout's .git, as the image's: deploy/Dockerfile passes REVISION) or else git,
 * and the build date from SOURCE_DATE_EPOCH (reproducible builds' variable) or else `now`.
 * Throws a TypeError naming a SOURCE_DATE_EPOCH that is not whole seconds.
 */
export function buildInfoFor(
  env: Record<string, string | undefined>,
  fromGit: () => BuildInfo,
  now: Date,
): BuildInfo {
  const buildDate = (sourceDateEpoch(env) ?? now).toISOString().replace(/\.\d{3}Z$/, "Z");
  const commit = env.LACE_BUILD_COMMIT;
  if (commit) return { commit, treeState: "", commitDate: "", buildDate };
  return { ...fromGit(), buildDate };
}

/**
 * Explains a failed `deno compile` whose output shows it could not fetch denort, or returns
 * undefined when the failure is something else (then deno's own message stands).
 */
export function denortHint(output: string, denortBin: string | undefined): string | undefined {
  const fetchFailed = /denort-[\w.-]+\.zip|Setting up base binary|error sending request/i.test(
    output,
  );
  if (!fetchFailed) return undefined;
  if (denortBin) {
    return `deno compile could not use DENORT_BIN "${denortBin}": check that it is denort ` +
      `${Deno.version.deno} for this platform`;
  }
  return `deno compile needs the denort runtime ${Deno.version.deno} and could not download it: ` +
    "provide it offline with DENORT_BIN=/path/to/denort (from the Deno release's " +
    `denort-<target>.zip, the same version), e.g. DENORT_BIN=$HOME/denort deno task compile`;
}

/**
 * Checks DENORT_BIN before compiling: it must be an executable file, and not the full `deno`
 * CLI, which compiles without error but yields a binary that runs as `deno` and ignores the
 * embedded program. Returns an error message, or undefined when it is usable or unset.
 */
export function denortProblem(denortBin: string, denoExec: string): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(denortBin);
  } catch {
    return `DENORT_BIN "${denortBin}" does not exist: point it at a denort ${Deno.version.deno} binary`;
  }
  if (!info.isFile || ((info.mode ?? 0o755) & 0o111) === 0) {
    return `DENORT_BIN "${denortBin}" is not an executable file: point it at a denort binary`;
  }
  if (Deno.realPathSync(denortBin) === Deno.realPathSync(denoExec)) {
    return `DENORT_BIN "${denortBin}" is the deno CLI itself, not denort: the compiled binary ` +
      "would run as deno and ignore the program; use the denort binary of the same release";
  }
  return undefined;
}

async function main(args: string[]): Promise<number> {
  let options: CompileOptions;
  try {
    options = parseCompileArgs(args);
  } catch (error) {
    console.error(`compile: ${(error as Error).message}`);
    return 2;
  }
  try {
    Deno.statSync(join(ROOT, BPF_OBJECT));
  } catch {
    console.error(
      `compile: BPF object "${BPF_OBJECT}" not found: build it first with deno task bpf`,
    );
    return 1;
  }

  try {
    const { recorded } = await buildBundle({
      output: CLIENT_NODE_BUNDLE,
      record: CLIENT_NODE_BUNDLE_RECORD,
    });
    if (recorded) {
      console.error(
        `compile: the lockfile, the entry or Deno changed since ${CLIENT_NODE_BUNDLE_RECORD} ` +
          "was recorded: recorded the new build; commit it",
      );
    }
  } catch (error) {
    console.error(`compile: the Kubernetes client's bundle: ${(error as Error).message}`);
    return 1;
  }

  const env = Deno.env.toObject();
  const denortBin = env.DENORT_BIN || undefined;
  // An empty DENORT_BIN (e.g. an unset build argument) means "download", not "this path".
  if (!denortBin) delete env.DENORT_BIN;
  if (denortBin) {
    const problem = denortProblem(denortBin, Deno.execPath());
    if (problem) {
      console.error(`compile: ${problem}`);
      return 1;
    }
  }

  let info: BuildInfo;
  try {
    info = buildInfoFor(env, gitBuildInfo, new Date());
  } catch (error) {
    console.error(`compile: ${(error as Error).message}`);
    return 2;
  }
  await Deno.mkdir(join(ROOT, dirname(options.output)), { recursive: true });
  const started = performance.now();
  // Removed after: a run from source reads git, not a stale file.
  await Deno.writeTextFile(join(ROOT, BUILD_INFO), JSON.stringify(info) + "\n");
  let compiled;
  try {
    compiled = await new Deno.Command(Deno.execPath(), {
      args: compileCommandArgs(options),
      cwd: ROOT,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } finally {
    await Deno.remove(join(ROOT, BUILD_INFO)).catch(() => {});
  }
  const { code, stdout, stderr } = compiled;
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  if (code !== 0) {
    console.error(text.trimEnd());
    const hint = denortHint(text, denortBin);
    console.error(`compile: ${hint ?? `deno compile failed with exit code ${code}`}`);
    return 1;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const size = (Deno.statSync(join(ROOT, options.output)).size / 2 ** 20).toFixed(0);
  console.error(
    `compile: wrote ${options.output} (${size} MiB, ${BPF_OBJECT} embedded, commit ` +
      `${info.commit}, built ${info.buildDate}) in ${seconds}s`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
