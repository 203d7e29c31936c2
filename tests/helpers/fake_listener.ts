/**
 * Stand-ins for the agent's listeners in unit tests: a listener that fails as
 * EMFILE does and then hands out prepared connections, and a raw client read
 * that waits for the server to close. Shared by the accept loop, HTTP
 * listener and CNI server tests (fake time: fake_time.ts).
 */
import type { Acceptor } from "../../lib/socket/accept_loop.ts";

/** A listener from `scriptedListener`: how often accept() was called, and whether it was closed. */
export type ScriptedListener<C extends { close(): void }> = Acceptor<C> & {
  accepts: number;
  closed: boolean;
};

/**
 * A listener whose accept() fails `failures` times (with EMFILE's message),
 * then hands out `conns` one by one, then waits until closed.
 */
export function scriptedListener<C extends { close(): void }>(
  conns: C[],
  failures = 0,
): ScriptedListener<C> {
  const end = Promise.withResolvers<never>();
  end.promise.catch(() => {}); // nobody may be waiting in accept() when it closes
  const queue = [...conns];
  return {
    accepts: 0,
    closed: false,
    accept() {
      this.accepts++;
      if (failures > 0) {
        failures--;
        return Promise.reject(new Error("Too many open files (os error 24)"));
      }
      return queue.length ? Promise.resolve(queue.shift()!) : end.promise;
    },
    close() {
      this.closed = true;
      end.reject(new Deno.errors.BadResource("listener closed"));
    },
  };
}

/** Reads from a real connection until the server closes it; resolves the text it sent. */
export async function readUntilClosed(conn: Deno.Conn): Promise<string> {
  let got = "";
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return got;
    got += new TextDecoder().decode(buf.subarray(0, n));
  }
}
