/**
 * A root-only unix socket, created so that its path is never reachable with
 * looser permissions and a stale socket of a previous agent is replaced in one
 * step. The CNI socket and the agent's local debug socket both use it.
 */
import { getLogger } from "@logtape/logtape";
import { ensureRootDir } from "../os/root_dir.ts";

const log = getLogger(["lace", "listen"]);

export interface UnixSocket {
  readonly listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  /** Removes the socket file if it is still ours (another agent may have replaced it). */
  remove(): void;
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/**
 * Listens on `socketPath`. The parent directory is created 0700 when missing,
 * and an existing one must be root's alone (os/root_dir.ts: a readable one is
 * tightened to 0700, one that is a symlink, someone else's or writable by
 * others is refused); the socket is bound under a temporary name, made 0600,
 * and renamed over the path. A path that exists and is not a socket is an error naming `flag`, the
 * setting that chose the path.
 */
export async function listenUnixSocket(socketPath: string, flag: string): Promise<UnixSocket> {
  if (!socketPath.startsWith("/")) {
    throw new TypeError(`${flag} must be an absolute path: "${socketPath}"`);
  }
  const dir = dirname(socketPath);
  const dirInfo = lstatOrNull(dir);
  if (dirInfo && !dirInfo.isDirectory && !dirInfo.isSymlink) {
    throw new Error(`Parent of the socket "${socketPath}" is not a directory: fix ${flag}`);
  }
  // Root's alone: nobody else may reach the socket, or plant files beside it (the agent writes
  // node-networks.json there). The chart's hostPath is made 0755 by the kubelet: tightened here.
  if (ensureRootDir(dir, `Directory of ${flag}`) === "tightened") {
    log.warn("Tightened the socket directory {dir} to mode 0700", { dir });
  }
  const existing = lstatOrNull(socketPath);
  if (existing && !existing.isSocket) {
    throw new Error(
      `"${socketPath}" exists and is not a socket: remove it or choose another ${flag}`,
    );
  }
  const temp = `${dir}/.${socketPath.slice(dir.length + 1)}.${Deno.pid}.${
    crypto.randomUUID().slice(0, 8)
  }`;
  const listener = Deno.listen({ transport: "unix", path: temp });
  let ino: number | null;
  try {
    await Deno.chmod(temp, 0o600);
    await Deno.rename(temp, socketPath);
    ino = Deno.lstatSync(socketPath).ino;
  } catch (e) {
    listener.close();
    try {
      Deno.removeSync(temp);
    } catch { /* not created, or already renamed */ }
    throw new Error(`Cannot create the socket "${socketPath}": ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (existing) log.info("Replaced the stale socket {path}", { path: socketPath });
  return {
    listener,
    remove() {
      if (ino !== null && lstatOrNull(socketPath)?.ino === ino) {
        try {
          Deno.removeSync(socketPath);
        } catch { /* already gone */ }
      }
      ino = null;
    },
  };
}
