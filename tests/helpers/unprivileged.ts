/**
 * Connecting to a unix socket as an unprivileged user, for the tests of who may open the
 * agent's sockets: `socat` run by `setpriv` as nobody (65534), no supplementary groups. A file
 * mode alone proves nothing; the kernel's answer to a connect does.
 */
import { dirname } from "node:path";

const NOBODY = "65534";

/** Why an unprivileged connect cannot be tried here (not root, no setpriv or socat), if so. */
export async function unprivilegedUnavailable(): Promise<string | undefined> {
  if (Deno.uid?.() !== 0) return "switching to another user needs root";
  for (const program of ["setpriv", "socat"]) {
    const found = await new Deno.Command("sh", {
      args: ["-c", `command -v ${program}`],
      stdout: "null",
    }).output();
    if (!found.success) return `${program} is not installed`;
  }
  return undefined;
}

/** Connects to the socket at `path` as nobody; whether it connected and socat's stderr. */
export async function connectAsNobody(path: string): Promise<{ connected: boolean; why: string }> {
  const out = await new Deno.Command("setpriv", {
    args: [
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      "--clear-groups",
      "--",
      "socat",
      "-u",
      "OPEN:/dev/null",
      `UNIX-CONNECT:${path}`,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  return { connected: out.success, why: new TextDecoder().decode(out.stderr) };
}

/**
 * Asserts through `check` that nobody is refused at each layer on its own: first the socket's
 * directory, with every directory above it and the socket itself opened up (so only the
 * directory's mode can refuse), then the socket, with its directory opened up too. Modes are
 * put back after.
 */
export async function refusedAtEachLayer(
  socket: string,
  top: string,
  check: (layer: string, result: { connected: boolean; why: string }) => void,
): Promise<void> {
  const holder = dirname(socket);
  const changed: { path: string; mode: number }[] = [];
  const open = async (path: string, mode: number) => {
    changed.push({ path, mode: Deno.statSync(path).mode! & 0o7777 });
    await Deno.chmod(path, mode);
  };
  try {
    for (let dir = dirname(holder); dir.startsWith(top); dir = dirname(dir)) {
      await open(dir, 0o755);
      if (dir === top) break;
    }
    await open(socket, 0o666);
    check("its directory", await connectAsNobody(socket));
    await Deno.chmod(socket, changed.pop()!.mode);
    await open(holder, 0o755);
    check("the socket", await connectAsNobody(socket));
  } finally {
    for (const { path, mode } of changed.reverse()) await Deno.chmod(path, mode);
  }
}
