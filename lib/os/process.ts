/**
 * For the child processes the demo, the doctor, the benchmarks and the tests start: run a small
 * command (ip, sysctl), read a child's output line by line, name things uniquely, find a free
 * loopback port for a child to listen on.
 */

/** Runs a command to completion; throws with its stderr when it fails. */
export async function run(cmd: string[]): Promise<string> {
  const out = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr).trim();
    throw new Error(`Command failed (exit ${out.code}): ${cmd.join(" ")}: ${err}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Random lowercase hex for unique names. */
export function randomSuffix(bytes = 3): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

/**
 * Reads newline-separated lines from a byte stream, for the JSON-line and
 * "ready" protocols of the sim's child processes.
 */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
    }
  }
  if (buffered) yield buffered;
}

/**
 * A TCP port on 127.0.0.1 that is free now (the kernel's choice), for a child to listen on. It is
 * released before the child takes it, so another process could take it first: only for tests,
 * benchmarks and the demo on a machine of their own.
 */
export function freeLoopbackPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
