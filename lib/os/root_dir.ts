/**
 * Directories only root may touch: the bpffs pin path and its layout
 * directories, the directory of the agent's sockets (/run/lace). Each is
 * created 0700, or, when it exists, checked without following a symlink:
 * owned by root, writable by no one else, every parent safe from a rename by
 * someone else. A looser one is refused with what to do, except one that is
 * root's and only readable by others (what older releases, and the kubelet's
 * DirectoryOrCreate, made): that one is tightened to 0700 in place, since no
 * one but root can have changed what it holds. A directory root writes into
 * that others may read (the CNI configuration directory) and a file root
 * writes or removes are held to the same rule (sharedDirProblem,
 * judgeRootFile). The judgements are pure; ensureRootDir, rootDirProblem and
 * sharedDirProblem do the I/O.
 */
import { dirname } from "node:path";

/** What the judgement needs of lstat(2). */
export interface DirStat {
  isSymlink: boolean;
  isDirectory: boolean;
  uid: number | null;
  /** st_mode, with or without the file type bits. */
  mode: number | null;
}

export type RootDirVerdict =
  | { kind: "ok" }
  | { kind: "tighten"; from: number }
  | { kind: "refuse"; reason: string };

const S_ISVTX = 0o1000;
const GROUP_OTHER_WRITE = 0o022;
const GROUP_OTHER_ANY = 0o077;

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
}

/**
 * Whether a directory that exists may hold root's state as it is, after
 * chmod 0700, or not at all. `owner` is root's uid (this process's).
 */
export function judgeRootDir(stat: DirStat, owner: number): RootDirVerdict {
  if (stat.isSymlink) return { kind: "refuse", reason: "is a symbolic link" };
  if (!stat.isDirectory) return { kind: "refuse", reason: "is not a directory" };
  if (stat.uid !== owner) {
    return {
      kind: "refuse",
      reason: `is owned by uid ${stat.uid}, not root: whoever owns it can remove, rename or ` +
        "replace what root puts there",
    };
  }
  const mode = (stat.mode ?? 0) & 0o7777;
  if (mode & GROUP_OTHER_WRITE) {
    return {
      kind: "refuse",
      reason: `is writable by group or others (mode ${octal(mode)}): anyone may have added or ` +
        "replaced entries in it",
    };
  }
  if (mode & GROUP_OTHER_ANY) return { kind: "tighten", from: mode };
  return { kind: "ok" };
}

/**
 * Why a parent directory lets someone other than root move its child aside
 * (and put their own in its place), or undefined when it does not: it must be
 * root's, and writable by no one else unless sticky (like /tmp, or a bpffs
 * mounted without a mode), where only a child's owner may rename it.
 */
export function judgeParent(stat: DirStat, owner: number): string | undefined {
  if (stat.uid !== owner && stat.uid !== 0) {
    return `is owned by uid ${stat.uid}, who can rename what it holds`;
  }
  const mode = (stat.mode ?? 0) & 0o7777;
  if (mode & GROUP_OTHER_WRITE && !(mode & S_ISVTX)) {
    return `is writable by group or others without the sticky bit (mode ${octal(mode)})`;
  }
  return undefined;
}

function lstatOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** What the file judgement needs of lstat(2) or fstat(2). */
export interface FileStat {
  isSymlink: boolean;
  isFile: boolean;
  uid: number | null;
  /** st_mode, with or without the file type bits. */
  mode: number | null;
}

/**
 * Why root may not write, replace or remove the file as it is, or undefined: a symlink
 * takes root's write wherever it points, another user's file is theirs to change while root
 * trusts it (and to keep as theirs after root rewrites it), and one group or others may write
 * is anyone's. `owner` is root's uid (this process's); a file of uid 0 is root's too.
 */
export function judgeRootFile(stat: FileStat, owner: number): string | undefined {
  if (stat.isSymlink) return "is a symbolic link";
  if (!stat.isFile) return "is not a regular file";
  if (stat.uid !== owner && stat.uid !== 0) return `is owned by uid ${stat.uid}, not root`;
  const mode = (stat.mode ?? 0) & 0o7777;
  if (mode & GROUP_OTHER_WRITE) return `is writable by group or others (mode ${octal(mode)})`;
  return undefined;
}

/** The first parent of `path` (resolved, up to /) someone else could rename it in, and why. */
function unsafeParent(path: string, owner: number): string | undefined {
  for (let p = Deno.realPathSync(dirname(path));; p = dirname(p)) {
    const why = judgeParent(Deno.lstatSync(p), owner);
    if (why) return `its parent "${p}" ${why}`;
    if (p === "/") return undefined;
  }
}

/**
 * Why someone other than root could change what the existing directory `path` holds, or
 * undefined: it must be root's, writable by no one else, and every parent safe from someone
 * else renaming it; others may read it (judgeRootDir's "tighten" is fine here). For a
 * directory root writes into that other tools read, such as the CNI configuration directory.
 * A symlink is refused: pass the resolved path when a symlinked directory is allowed.
 */
export function sharedDirProblem(
  path: string,
  owner: number = Deno.uid() ?? 0,
): string | undefined {
  const verdict = judgeRootDir(Deno.lstatSync(path), owner);
  if (verdict.kind === "refuse") return verdict.reason;
  return unsafeParent(path, owner);
}

/** What to do about a directory refused for `reason`. */
function refusal(what: string, path: string, reason: string): string {
  return `${what} "${path}" ${reason}. Only root may write there: check what it holds, then ` +
    `remove it (\`rm -r "${path}"\`) so the agent creates it 0700, or make it root's and 0700 ` +
    `(\`chown root:root "${path}" && chmod 0700 "${path}"\`), and start again`;
}

/**
 * Why the existing directory `path` may not hold root's state, or undefined
 * when it may (after a chmod 0700 where `tightenable`); read-only, for
 * `lace doctor` and `lace uninstall`. Undefined too when it does not exist.
 */
export function rootDirProblem(
  path: string,
  what: string,
  owner: number = Deno.uid() ?? 0,
): { problem: string; tightenable: boolean } | undefined {
  const stat = lstatOrUndefined(path);
  if (!stat) return undefined;
  const verdict = judgeRootDir(stat, owner);
  if (verdict.kind === "refuse") {
    return { problem: refusal(what, path, verdict.reason), tightenable: false };
  }
  const parent = unsafeParent(path, owner);
  if (parent) return { problem: refusal(what, path, parent), tightenable: false };
  if (verdict.kind === "tighten") {
    return {
      problem: `${what} "${path}" is readable by group or others (mode ${octal(verdict.from)})`,
      tightenable: true,
    };
  }
  return undefined;
}

/**
 * Makes `path` a directory only root can use: creates it (and missing
 * parents) 0700, or checks the existing one and tightens a root-owned,
 * read-only-to-others one to 0700. Anything looser is refused with an Error
 * saying what to do; `what` names it ("Pin path"). Returns what it did.
 */
export function ensureRootDir(
  path: string,
  what: string,
  owner: number = Deno.uid() ?? 0,
): "created" | "tightened" | "ok" {
  let outcome: "created" | "tightened" | "ok" = "ok";
  if (!lstatOrUndefined(path)) {
    try {
      // The mode applies at mkdir(2): there is no moment the directory is looser.
      Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
      outcome = "created";
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
  }
  const stat = Deno.lstatSync(path);
  const verdict = judgeRootDir(stat, owner);
  if (verdict.kind === "refuse") throw new Error(refusal(what, path, verdict.reason));
  const parent = unsafeParent(path, owner);
  if (parent) throw new Error(refusal(what, path, parent));
  if (verdict.kind === "tighten") {
    Deno.chmodSync(path, 0o700);
    outcome = "tightened";
  }
  return outcome;
}
