/**
 * A helper process spoken to with JSON lines on stdin/stdout: the connect
 * worker and the API server process. One request at a time, in order.
 */
import { fileURLToPath } from "node:url";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { lines } from "../lib/os/process.ts";

export class JsonLineChild {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncGenerator<string>;
  readonly what: string;
  readonly pid: number;
  /** The first line the child printed (its "ready" message). */
  readonly ready: Record<string, unknown>;
  #closed = false;

  private constructor(
    what: string,
    child: Deno.ChildProcess,
    it: AsyncGenerator<string>,
    ready: Record<string, unknown>,
  ) {
    this.what = what;
    this.#child = child;
    this.pid = child.pid;
    this.#writer = child.stdin.getWriter();
    this.#lines = it;
    this.ready = ready;
  }

  /** Starts `cmd` and waits for its first JSON line. */
  static async spawn(what: string, cmd: string[], timeoutMs = 30_000): Promise<JsonLineChild> {
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const it = lines(child.stdout);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} did not start within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      const first = await Promise.race([it.next(), timeout]);
      if (first.done) throw new Error(`${what} exited before it was ready`);
      return new JsonLineChild(what, child, it, JSON.parse(first.value));
    } catch (e) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      await child.status;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends one request and waits for its answer line. */
  async request<T>(body: unknown): Promise<T> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(body) + "\n"));
    const line = await this.#lines.next();
    if (line.done) throw new Error(`${this.what} exited`);
    const answer = JSON.parse(line.value);
    if (answer.error) throw new Error(`${this.what}: ${answer.error}`);
    return answer as T;
  }

  /** Closes stdin (the child exits), kills it if it lingers, and reaps it. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#writer.close();
    } catch { /* already closed */ }
    const timer = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch { /* gone */ }
    }, 5000);
    await this.#child.status;
    clearTimeout(timer);
    for await (const _ of this.#lines) { /* drain */ }
  }
}

/** The test API server in a process of its own (api_server_process.ts), closed by `cleanups`. */
export async function startApiServerProcess(cleanups: CleanupStack): Promise<JsonLineChild> {
  const server = await JsonLineChild.spawn("test API server", [
    Deno.execPath(),
    "run",
    "--allow-all",
    fileURLToPath(new URL("./api_server_process.ts", import.meta.url)),
  ]);
  cleanups.push(() => server.close());
  return server;
}
