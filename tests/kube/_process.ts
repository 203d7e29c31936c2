/**
 * A child process of the test control plane (etcd, kube-apiserver) whose output goes to a log
 * file, which is stopped with SIGTERM then SIGKILL, and which dies with the test process when
 * that is killed (setpriv --pdeathsig), so an aborted run leaves nothing listening.
 */
import { isExecutable } from "../helpers/executable.ts";

const setpriv = "/usr/bin/setpriv";

export class ManagedProcess {
  readonly #child: Deno.ChildProcess;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #output: Promise<unknown>;
  #exited: Deno.CommandStatus | undefined;

  private constructor(child: Deno.ChildProcess, logFile: Deno.FsFile) {
    this.#child = child;
    // Straight to the file: FsFile.writable holds what it is given until it is closed, and a
    // failure message reads the log while the process still runs.
    const copy = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) {
        let rest = chunk;
        while (rest.length > 0) rest = rest.subarray(await logFile.write(rest));
      }
    };
    this.#output = Promise.allSettled([copy(child.stdout), copy(child.stderr)])
      .finally(() => logFile.close());
    this.#status = child.status.then((status) => (this.#exited = status));
  }

  /** Starts command with args, appending its stdout and stderr to logPath. */
  static async spawn(command: string, args: string[], logPath: string): Promise<ManagedProcess> {
    const logFile = await Deno.open(logPath, { write: true, create: true, append: true });
    const [program, argv] = isExecutable(setpriv)
      ? [setpriv, ["--pdeathsig", "SIGKILL", "--", command, ...args]]
      : [command, args];
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(program, {
        args: argv,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (cause) {
      logFile.close();
      throw new Error(`Cannot start "${command}"`, { cause });
    }
    return new ManagedProcess(child, logFile);
  }

  get pid(): number {
    return this.#child.pid;
  }

  /** The exit status once the process has exited, else undefined. */
  get exited(): Deno.CommandStatus | undefined {
    return this.#exited;
  }

  /** Resolves with the exit status when the process exits. */
  get status(): Promise<Deno.CommandStatus> {
    return this.#status;
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves once the process and its output are done. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.#exited === undefined) {
      try {
        this.#child.kill("SIGTERM");
      } catch {
        // Already gone between the check and the signal.
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const killed = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          try {
            this.#child.kill("SIGKILL");
          } catch {
            // Exited during the grace period.
          }
          resolve();
        }, graceMs);
      });
      await Promise.race([this.#status, killed]);
      clearTimeout(timer);
    }
    await this.#status;
    await this.#output;
  }
}

/** The last maxLines lines of a log file, or a note that it cannot be read. */
export async function tail(path: string, maxLines = 60): Promise<string> {
  try {
    const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
    return lines.slice(-maxLines).join("\n");
  } catch (error) {
    return `(cannot read "${path}": ${error})`;
  }
}
