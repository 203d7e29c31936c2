/**
 * Test helper: runs a command function with console.log/console.error
 * captured, for tests of commands that print (`lace doctor`). Not used by
 * the product; shared by the unit tests beside the code and the privileged
 * tests in tests/.
 */
export async function captureConsole(
  run: () => Promise<number>,
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [], err: string[] = [];
  const { log, error } = console;
  console.log = (...a: unknown[]) => out.push(a.join(" "));
  console.error = (...a: unknown[]) => err.push(a.join(" "));
  try {
    const code = await run();
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}
