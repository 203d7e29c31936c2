/**
 * What /proc says about a process: the uid it runs as and its name. The
 * parser is pure; processUid and processComm read the files.
 */

/**
 * The uid a process runs as, from the `Uid:` line of /proc/PID/status (real, effective, saved,
 * filesystem): 0 only when the real and effective ids are both 0, else the first that is not.
 */
export function parseStatusUid(text: string): number | null {
  const line = /^Uid:\s+(\d+)\s+(\d+)/m.exec(text);
  if (!line) return null;
  const [real, effective] = [Number(line[1]), Number(line[2])];
  return real !== 0 ? real : effective;
}

/** The uid process `pid` runs as (see parseStatusUid); null when it is gone or unreadable. */
export function processUid(pid: number, procRoot = "/proc"): number | null {
  try {
    return parseStatusUid(Deno.readTextFileSync(`${procRoot}/${pid}/status`));
  } catch {
    return null;
  }
}

/** The name (comm) of process `pid`; null when it is gone or unreadable. */
export function processComm(pid: number, procRoot = "/proc"): string | null {
  try {
    return Deno.readTextFileSync(`${procRoot}/${pid}/comm`).trim();
  } catch {
    return null;
  }
}
