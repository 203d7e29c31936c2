/**
 * pods/exec for the test API server: the websocket channel protocol
 * (v5.channel.k8s.io, v4.channel.k8s.io) that client-node's Exec speaks.
 * Output goes out as binary frames prefixed with the channel (1 stdout,
 * 2 stderr), then one status frame (channel 3, a V1Status: Success, or
 * NonZeroExitCode with the exit code as a cause), then the server closes.
 * The command itself is answered by a function the test provides.
 */
import type { Route } from "./routing.ts";
import type { TestApiServer } from "./server.ts";
import { ApiError, statusResponse } from "./status.ts";

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  /** The negotiated subprotocol. */
  protocol: string;
}

export interface ExecReply {
  stdout?: string;
  /**
   * More stdout after `stdout`, a frame each, a macrotask apart, until the client closes the
   * session (an endless generator plays a pod that answers without end).
   */
  stdoutFrames?: Iterable<string>;
  stderr?: string;
  exitCode: number;
}

/** Answers one exec; may take its time (the client waits for the status frame). */
export type ExecRunner = (request: ExecRequest) => ExecReply | Promise<ExecReply>;

const PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

function frame(channel: number, text: string): Uint8Array {
  const body = new TextEncoder().encode(text);
  const out = new Uint8Array(body.length + 1);
  out[0] = channel;
  out.set(body, 1);
  return out;
}

/** The V1Status an API server sends on channel 3 for an exit code. */
function execStatus(exitCode: number): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message:
      `command terminated with non-zero exit code: error executing command, exit status ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

/**
 * Serves pods/exec on `server` with `runner`. The pod must exist in the
 * store (404 otherwise, like the real server). Returns the removal.
 */
export function installExec(server: TestApiServer, runner: ExecRunner): () => void {
  return server.addHandler((request: Request, route: Route | undefined) => {
    if (route?.resource !== "pods" || route.subresource !== "exec" || !route.namespace) {
      return undefined;
    }
    const podType = server.typeOf({ apiVersion: "v1", kind: "Pod" });
    try {
      server.store.get(podType, route.namespace, route.name!);
    } catch (e) {
      if (e instanceof ApiError) return statusResponse(e);
      throw e;
    }
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return statusResponse(new ApiError(400, "BadRequest", "exec needs a websocket upgrade"));
    }
    const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) =>
      p.trim()
    );
    const protocol = PROTOCOLS.find((p) => offered.includes(p));
    if (!protocol) {
      return statusResponse(
        new ApiError(400, "BadRequest", `no supported exec protocol in "${offered.join(", ")}"`),
      );
    }
    const url = new URL(request.url);
    const exec: ExecRequest = {
      namespace: route.namespace,
      pod: route.name!,
      container: url.searchParams.get("container") ?? "",
      command: url.searchParams.getAll("command"),
      protocol,
    };
    // Deno rejects the comma-separated protocol list as an option: upgrade
    // first, then name the chosen protocol on the response.
    const { socket, response } = Deno.upgradeWebSocket(request);
    response.headers.set("sec-websocket-protocol", protocol);
    socket.binaryType = "arraybuffer";
    socket.onopen = async () => {
      let reply: ExecReply;
      try {
        reply = await runner(exec);
      } catch (e) {
        reply = { exitCode: 126, stderr: `exec runner failed: ${e}` };
      }
      if (socket.readyState !== WebSocket.OPEN) return;
      if (reply.stdout) socket.send(frame(1, reply.stdout));
      for (const text of reply.stdoutFrames ?? []) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(frame(1, text));
      }
      if (reply.stderr) socket.send(frame(2, reply.stderr));
      socket.send(frame(3, JSON.stringify(execStatus(reply.exitCode))));
      socket.close(1000);
    };
    socket.onerror = () => {};
    return response;
  });
}
