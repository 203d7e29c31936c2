/**
 * `deno task release`: packs compiled `lace` binaries into the archives krew installs and writes
 * the krew manifest that names them, with each archive's sha256.
 *
 *   deno task release --base-url URL --binary amd64=dist/lace-amd64 [--binary arm64=PATH]
 *                     [--out dist/release] [--version vX.Y.Z]
 *
 * Each archive, `lace-linux-ARCH.tar.gz`, holds the binary as `lace` and
 * deploy/kubectl/kubectl-lace beside it, both 0755 and owned by 0:0, in name order with one
 * mtime (SOURCE_DATE_EPOCH, else the commit's), so the same inputs give the same bytes and the
 * same sha256. The manifest is deploy/krew/lace.yaml with the version, each platform's uri
 * (URL/lace-linux-ARCH.tar.gz) and sha256 filled in; a platform without a binary is left out.
 * SHA256SUMS lists the archives as sha256sum(1) checks them.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { parse, stringify } from "yaml";
import denoJson from "../deno.json" with { type: "json" };
import { gitBuildInfo } from "../lib/version.ts";
import { sourceDateEpoch } from "./compile.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const KREW_TEMPLATE = join(ROOT, "deploy/krew/lace.yaml");
export const KUBECTL_PLUGIN = join(ROOT, "deploy/kubectl/kubectl-lace");

/** The architectures the manifest has a platform for, with their ELF e_machine and Deno triple. */
export const ARCHES = {
  amd64: { machine: 62, machineName: "x86-64", triple: "x86_64-unknown-linux-gnu" },
  arm64: { machine: 183, machineName: "AArch64", triple: "aarch64-unknown-linux-gnu" },
} as const;
export type Arch = keyof typeof ARCHES;

/** What a release run was asked for. */
export interface ReleaseOptions {
  baseUrl: string;
  binaries: Partial<Record<Arch, string>>;
  out: string;
  version: string;
}

/** Parses this script's arguments; throws TypeError naming the bad argument and what to pass. */
export function parseReleaseArgs(args: string[]): ReleaseOptions {
  const options: ReleaseOptions = {
    baseUrl: "",
    binaries: {},
    out: "dist/release",
    version: `v${denoJson.version}`,
  };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (!["--base-url", "--binary", "--out", "--version"].includes(flag)) {
      throw new TypeError(
        `Unknown argument "${args[i]}": use --base-url URL, --binary ARCH=PATH, --out DIR or ` +
          "--version vX.Y.Z",
      );
    }
    const value = inline ?? args[++i];
    if (!value) throw new TypeError(`Missing value for ${flag}`);
    if (flag === "--base-url") options.baseUrl = value.replace(/\/+$/, "");
    else if (flag === "--out") options.out = value;
    else if (flag === "--version") options.version = value;
    else {
      const [arch, path] = value.split(/=(.*)/s, 2);
      if (!(arch in ARCHES) || !path) {
        throw new TypeError(
          `--binary "${value}" must be ARCH=PATH with ARCH one of ${
            Object.keys(ARCHES).join(", ")
          }`,
        );
      }
      if (options.binaries[arch as Arch]) throw new TypeError(`--binary ${arch} given twice`);
      options.binaries[arch as Arch] = path;
    }
  }
  if (!options.baseUrl) {
    throw new TypeError("Missing --base-url: the https URL the archives will be published under");
  }
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new TypeError(`--base-url "${options.baseUrl}" is not a URL`);
  }
  // krew downloads over whatever the manifest says; a release is fetched over TLS only.
  if (url.protocol !== "https:") {
    throw new TypeError(`--base-url "${options.baseUrl}" must be https://`);
  }
  if (Object.keys(options.binaries).length === 0) {
    throw new TypeError(
      "Missing --binary: pass at least one, e.g. --binary amd64=dist/lace-amd64 from " +
        `deno task compile --target ${ARCHES.amd64.triple} --output dist/lace-amd64`,
    );
  }
  if (!/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(options.version)) {
    throw new TypeError(`--version "${options.version}" must be semantic, as krew wants: vX.Y.Z`);
  }
  return options;
}

/**
 * Why the first bytes of a file are not a 64-bit little-endian Linux executable for `arch`, or
 * undefined when they are. Catches the usual slip: the build machine's binary packed for the
 * other platform, which krew would install and which would fail only when run.
 */
export function elfProblem(head: Uint8Array, arch: Arch): string | undefined {
  const magic = head.length >= 20 && head[0] === 0x7f && head[1] === 0x45 && head[2] === 0x4c &&
    head[3] === 0x46;
  if (!magic) return "is not an ELF executable (a compiled lace is; a script is not)";
  if (head[4] !== 2 || head[5] !== 1) return "is not a 64-bit little-endian ELF";
  const machine = head[18] | (head[19] << 8);
  const want = ARCHES[arch];
  if (machine === want.machine) return undefined;
  const found = Object.values(ARCHES).find((a) => a.machine === machine);
  return `is ${
    found ? `an ${found.machineName}` : `a machine ${machine}`
  } ELF, not ${want.machineName}: ` +
    `compile it with deno task compile --target ${want.triple}`;
}

/** The archive's name of one architecture. */
export function archiveName(arch: Arch): string {
  return `lace-linux-${arch}.tar.gz`;
}

/**
 * The krew manifest of a release: the template with the version and, for each architecture
 * released, its uri and sha256; platforms not released are dropped. Throws when the template
 * has no platform for an architecture that was packed.
 */
export function releaseManifest(
  template: string,
  version: string,
  baseUrl: string,
  sums: Partial<Record<Arch, string>>,
): string {
  const manifest = parse(template);
  manifest.spec.version = version;
  const platforms: { selector: { matchLabels: Record<string, string> } }[] =
    manifest.spec.platforms;
  const kept = [];
  for (const platform of platforms) {
    const arch = platform.selector.matchLabels.arch as Arch;
    const sha256 = sums[arch];
    if (sha256 === undefined) continue;
    kept.push({ ...platform, uri: `${baseUrl}/${archiveName(arch)}`, sha256 });
  }
  for (const arch of Object.keys(sums)) {
    if (!kept.some((p) => p.selector.matchLabels.arch === arch)) {
      throw new Error(`deploy/krew/lace.yaml has no linux/${arch} platform to fill in`);
    }
  }
  manifest.spec.platforms = kept;
  return `# krew's manifest of lace ${version}, written by deno task release.\n` +
    stringify(manifest, { lineWidth: 0 });
}

/** The seconds every archived file's mtime is set to: SOURCE_DATE_EPOCH, else the commit's. */
function archiveEpoch(): number {
  const date = sourceDateEpoch(Deno.env.toObject()) ?? new Date(gitBuildInfo().commitDate);
  if (Number.isNaN(date.getTime())) {
    throw new Error("cannot read the commit's time from git: set SOURCE_DATE_EPOCH");
  }
  return Math.floor(date.getTime() / 1000);
}

/** Packs `lace` and kubectl-lace into one reproducible .tar.gz; returns its bytes. */
async function packArchive(binary: string, epoch: number): Promise<Uint8Array> {
  const stage = await Deno.makeTempDir({ prefix: "lace-release-" });
  try {
    await Deno.copyFile(binary, join(stage, "lace"));
    await Deno.copyFile(KUBECTL_PLUGIN, join(stage, "kubectl-lace"));
    for (const name of ["lace", "kubectl-lace"]) await Deno.chmod(join(stage, name), 0o755);
    const tar = await new Deno.Command("tar", {
      args: [
        "--create",
        "--file=-",
        "--format=gnu",
        "--sort=name",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        `--mtime=@${epoch}`,
        "--directory",
        stage,
        "kubectl-lace",
        "lace",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!tar.success) throw new Error(`tar failed: ${new TextDecoder().decode(tar.stderr)}`);
    // node's gzip writes no name and a zero mtime in its header, so the bytes depend on tar's only.
    return gzipSync(tar.stdout, { level: 9 });
  } finally {
    await Deno.remove(stage, { recursive: true });
  }
}

async function readHead(path: string): Promise<Uint8Array> {
  using file = await Deno.open(path);
  const head = new Uint8Array(20);
  const n = (await file.read(head)) ?? 0;
  return head.subarray(0, n);
}

async function main(args: string[]): Promise<number> {
  let options: ReleaseOptions;
  try {
    options = parseReleaseArgs(args);
  } catch (error) {
    console.error(`release: ${(error as Error).message}`);
    return 2;
  }
  try {
    const epoch = archiveEpoch();
    const sums: Partial<Record<Arch, string>> = {};
    const binaries = Object.entries(options.binaries) as [Arch, string][];
    // Every binary checked before anything is written: no half release.
    for (const [arch, binary] of binaries) {
      const problem = elfProblem(await readHead(binary), arch);
      if (problem) throw new Error(`--binary ${arch}=${binary} ${problem}`);
    }
    await Deno.mkdir(options.out, { recursive: true });
    for (const [arch, binary] of binaries) {
      const archive = await packArchive(binary, epoch);
      sums[arch] = createHash("sha256").update(archive).digest("hex");
      await Deno.writeFile(join(options.out, archiveName(arch)), archive);
    }
    const manifest = releaseManifest(
      await Deno.readTextFile(KREW_TEMPLATE),
      options.version,
      options.baseUrl,
      sums,
    );
    await Deno.writeTextFile(join(options.out, "lace.yaml"), manifest);
    const lines = Object.entries(sums).map(([arch, sum]) => `${sum}  ${archiveName(arch as Arch)}`);
    await Deno.writeTextFile(join(options.out, "SHA256SUMS"), lines.join("\n") + "\n");
    for (const line of lines) console.log(line);
    console.log(
      `release: wrote ${join(options.out, "lace.yaml")}; publish the archives ` +
        `under ${options.baseUrl}/`,
    );
    return 0;
  } catch (error) {
    console.error(`release: ${(error as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
