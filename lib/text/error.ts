/** The message of anything thrown: an Error's message, else its text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
