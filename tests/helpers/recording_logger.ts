/**
 * A logger for unit tests that keeps its lines as "level: message", with the message's
 * `{name}` placeholders filled from its properties (as LogTape renders them) and `{{`/`}}` as one
 * brace. Only the (message, properties) form of a LogTape logger's methods is supported.
 */
export function recordingLogger() {
  const lines: string[] = [];
  const write = (level: string) => (message: string, props?: Record<string, unknown>) => {
    const text = message.replace(
      /\{\{|\}\}|\{(\w+)\}/g,
      (m, name?: string) => name ? String(props?.[name]) : m[0],
    );
    lines.push(`${level}: ${text}`);
  };
  return {
    lines,
    logger: { info: write("info"), warning: write("warning"), error: write("error") } as never,
  };
}
