/**
 * The plugin's side of the socket: one request, one reply, within a deadline.
 * Every failure becomes an `AgentCallError` saying why (down, slow, broken),
 * because the plugin reports it and carries on.
 */
import { MAX_LINE_BYTES, parseReply, type Reply, type Request } from "./protocol.ts";

export type AgentCallFailure = "unreachable" | "timeout" | "broken";

/** Why the agent could not answer; the plugin logs it and fails open. */
export class AgentCallError extends Error {
  override name = "AgentCallError";
  constructor(readonly kind: AgentCallFailure, message: string) {
    super(message);
  }
}

/** Sends one request and waits for its reply; the plugin's seam for tests. */
export type CallAgent = (socket: string, request: Request, timeoutMs: number) => Promise<Reply>;

const encoder = new TextEncoder();

/**
 * Connects to the agent's unix socket, sends `request` as one line and returns
 * the reply line decoded. Gives up after `timeoutMs` in total (connect, write,
 * the agent's work, read) by closing the connection.
 */
export async function callAgent(
  socket: string,
  request: Request,
  timeoutMs: number,
): Promise<Reply> {
  let conn: Deno.UnixConn | undefined;
  let timedOut = false;
  // AbortSignal.timeout, not setTimeout: Deno's first setTimeout adds CPU time to the plugin's
  // start (bench figure 6). Its timer does not keep the process alive; the pending connect or
  // read does.
  const signal = AbortSignal.timeout(timeoutMs);
  let onTimeout: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    onTimeout = () => {
      timedOut = true;
      try {
        conn?.close();
      } catch { /* already closed */ }
      reject(new AgentCallError("timeout", `Agent did not answer within ${timeoutMs}ms`));
    };
    signal.addEventListener("abort", onTimeout, { once: true });
  });
  const exchange = async (): Promise<Reply> => {
    try {
      conn = await Deno.connect({ transport: "unix", path: socket });
    } catch (e) {
      throw new AgentCallError(
        "unreachable",
        `Cannot connect to ${socket}: ${(e as Error).message}`,
      );
    }
    if (timedOut) conn.close();
    try {
      const bytes = encoder.encode(JSON.stringify(request) + "\n");
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
      const line = await readLine(conn);
      const reply = parseReply(line);
      if (reply.id !== null && reply.id !== request.id) {
        throw new AgentCallError(
          "broken",
          `Agent replied to request "${reply.id}", not "${request.id}"`,
        );
      }
      return reply;
    } catch (e) {
      if (e instanceof AgentCallError) throw e;
      if (timedOut) {
        throw new AgentCallError("timeout", `Agent did not answer within ${timeoutMs}ms`);
      }
      throw new AgentCallError("broken", `Talking to ${socket} failed: ${(e as Error).message}`);
    }
  };
  try {
    return await Promise.race([exchange(), deadline]);
  } finally {
    signal.removeEventListener("abort", onTimeout!);
    try {
      conn?.close();
    } catch { /* closed by the deadline */ }
  }
}

async function readLine(conn: Deno.UnixConn): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const buf = new Uint8Array(16 * 1024);
  while (true) {
    const n = await conn.read(buf);
    if (n === null) {
      throw new AgentCallError("broken", "Agent closed the connection without a reply");
    }
    const chunk = buf.slice(0, n);
    const nl = chunk.indexOf(10);
    if (nl >= 0) {
      chunks.push(chunk.subarray(0, nl));
      size += nl;
      break;
    }
    chunks.push(chunk);
    size += n;
    if (size > MAX_LINE_BYTES) throw new AgentCallError("broken", "Agent reply is too long");
  }
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return new TextDecoder().decode(out);
}
