/**
 * The build's version, shown by `lace version`, in build info and to doctor; and the commit it
 * was built from with the build's date: scripts/compile.ts writes them into build_info.json
 * beside this file and embeds it in the binary; run from source, git says the commit.
 */
import { fileURLToPath } from "node:url";
import denoJson from "../deno.json" with { type: "json" };

export const VERSION: string = denoJson.version;

/** What the commit and the build were, as `lace version` shows them. */
export interface BuildInfo {
  /** The commit's full hash, or "unknown". */
  commit: string;
  /** "dirty" when the tree had changes the commit does not hold, else "clean" ("" unknown). */
  treeState: "clean" | "dirty" | "";
  /** The commit's date (RFC 3339), or "". */
  commitDate: string;
  /** When the binary was compiled (RFC 3339); "" when run from source. */
  buildDate: string;
}

/** Where scripts/compile.ts writes the build's facts before compiling, and deletes them after. */
export const BUILD_INFO_FILE = new URL("./build_info.json", import.meta.url);

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** Runs git in the checkout this module is in; null when git is missing or fails. */
function git(args: string[]): string | null {
  try {
    const out = new Deno.Command("git", {
      args: ["-C", REPO, ...args],
      // A reader takes no lock: a `lace version` must not disturb a git command at work.
      env: { GIT_OPTIONAL_LOCKS: "0" },
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

/**
 * The commit the checkout holds, read from git (git refuses a checkout another user owns, as
 * its config could run commands: then the commit is unknown).
 */
export function gitBuildInfo(run: (args: string[]) => string | null = git): BuildInfo {
  const commit = run(["rev-parse", "HEAD"]);
  if (!commit) return { commit: "unknown", treeState: "", commitDate: "", buildDate: "" };
  const status = run(["status", "--porcelain", "--untracked-files=no"]);
  return {
    commit,
    treeState: status === null ? "" : status === "" ? "clean" : "dirty",
    commitDate: run(["show", "-s", "--format=%cI", "HEAD"]) ?? "",
    buildDate: "",
  };
}

/**
 * The build's facts: the embedded build_info.json of a compiled binary, else git's for a run
 * from source. Read when asked, never at import: git is a process to start.
 */
export function buildInfo(
  readEmbedded: () => string = () => Deno.readTextFileSync(BUILD_INFO_FILE),
  fromGit: () => BuildInfo = gitBuildInfo,
): BuildInfo {
  let text;
  try {
    text = readEmbedded();
  } catch {
    return fromGit();
  }
  const info = JSON.parse(text) as Partial<BuildInfo>;
  return {
    commit: typeof info.commit === "string" && info.commit ? info.commit : "unknown",
    treeState: info.treeState === "clean" || info.treeState === "dirty" ? info.treeState : "",
    commitDate: typeof info.commitDate === "string" ? info.commitDate : "",
    buildDate: typeof info.buildDate === "string" ? info.buildDate : "",
  };
}
