import assert from "node:assert/strict";
import { AgentCallError, callAgent } from "./client.ts";
import { PROTOCOL_VERSION } from "./protocol.ts";

Deno.test("callAgent() gives up with a timeout when the agent accepts but never answers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-client-" });
  const listener = Deno.listen({ transport: "unix", path: `${dir}/agent.sock` });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const call = callAgent(
      `${dir}/agent.sock`,
      { v: PROTOCOL_VERSION, id: "t", op: "gc", valid: [] },
      50,
    );
    await assert.rejects(call, (e) => e instanceof AgentCallError && e.kind === "timeout");
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
    await Deno.remove(dir, { recursive: true });
  }
});
