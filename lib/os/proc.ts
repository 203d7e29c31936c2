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

/**
 * The parts of /proc a scan of every process reads. A process may vanish between any two
 * reads, and its owner chooses how long some files are (a cmdline runs to megabytes), so each
 * read is bounded and answers null for a process gone or not ours to read. `procDir` reads a
 * /proc directory; tests pass one in memory.
 */
export interface ProcFs {
  /** The pids listed now, in no particular order. */
  pids(): number[];
  /** The first `maxBytes` bytes of file `name` of process `pid` as text; null when unreadable. */
  read(pid: number, name: string, maxBytes: number): string | null;
  /** Where link `name` of process `pid` points (`ns/mnt`); null when unreadable. */
  readLink(pid: number, name: string): string | null;
}

const decoder = new TextDecoder();
/** One buffer for every bounded read: a scan reads thousands of small files one after another. */
const readBuffer = new Uint8Array(16 * 1024);

/**
 * The first `maxBytes` bytes of a /proc file as text; null when it cannot be opened or read (the
 * process is gone, or not ours to read). The length of some files is their owner's choice, so
 * every read of /proc is bounded.
 */
export function readBounded(path: string, maxBytes: number): string | null {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path);
  } catch {
    return null; // gone between listing and reading, or not ours to read
  }
  try {
    const chunks: Uint8Array[] = [];
    let n = 0;
    // Until the end or the bound. A /proc file fills each read up to its end (seq_file and
    // cmdline alike), so a short read is the end: one read for a small file, not two.
    while (n < maxBytes) {
      const want = Math.min(readBuffer.length, maxBytes - n);
      const got = file.readSync(readBuffer.subarray(0, want));
      if (got === null || got === 0) break;
      chunks.push(readBuffer.slice(0, got));
      n += got;
      if (got < want) break;
    }
    if (chunks.length === 1) return decoder.decode(chunks[0]);
    const all = new Uint8Array(n);
    for (let off = 0, i = 0; i < chunks.length; off += chunks[i++].length) {
      all.set(chunks[i], off);
    }
    return decoder.decode(all);
  } catch {
    return null; // the process exited mid-read (ESRCH)
  } finally {
    file.close();
  }
}

/** A /proc directory (or a fixture tree shaped like one) as a ProcFs. */
export function procDir(root = "/proc"): ProcFs {
  return {
    pids() {
      const pids: number[] = [];
      for (const e of Deno.readDirSync(root)) {
        if (/^\d+$/.test(e.name)) pids.push(Number(e.name));
      }
      return pids;
    },
    read(pid, name, maxBytes) {
      return readBounded(`${root}/${pid}/${name}`, maxBytes);
    },
    readLink(pid, name) {
      try {
        return Deno.readLinkSync(`${root}/${pid}/${name}`);
      } catch {
        return null; // gone, or no ptrace right to the process
      }
    },
  };
}
