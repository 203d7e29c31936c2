/**
 * The agent's log as a unit test sees it while a LogLimiter runs: LogTape writes every line's
 * message into `messages` (JSON lines), and a limiter on fake time is installed for limitedLog.
 * Disposing uninstalls the limiter, writes its open windows and sends the log nowhere.
 */
import { getLogger } from "@logtape/logtape";
import { setupLogging } from "../../lib/log/setup.ts";
import { installLogLimiter, LogLimiter } from "../../lib/log/limiter.ts";
import { fakeTime } from "./fake_time.ts";

export function limitedLogCapture() {
  const { clock, timers } = fakeTime();
  const messages: string[] = [];
  setupLogging("info", "json", (bytes) => {
    messages.push(JSON.parse(new TextDecoder().decode(bytes)).message);
  });
  const limiter = new LogLimiter({ timers, overflowLogger: getLogger(["lace", "agent"]) });
  const uninstall = installLogLimiter(limiter);
  return {
    clock,
    timers,
    messages,
    [Symbol.dispose]() {
      uninstall();
      limiter.stop();
      setupLogging("info", "json", () => {});
    },
  };
}
