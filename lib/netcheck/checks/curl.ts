/**
 * The start of every curl command netcheck runs in a probe pod: quiet, URLs
 * taken literally, no proxy, and `timeoutMs` both to connect and in all.
 */
export function curlCommand(timeoutMs: number): string[] {
  const seconds = (timeoutMs / 1000).toFixed(3);
  return [
    "curl",
    "--silent",
    "--globoff",
    "--noproxy",
    "*",
    "--connect-timeout",
    seconds,
    "--max-time",
    seconds,
  ];
}
