/**
 * Runs `stop` once on the first SIGINT or SIGTERM, then exits (0 when it went well). A second
 * signal while stopping (a second after the first, or later) exits at once (130): the person
 * pressing Ctrl-C twice means it.
 */
export function onShutdown(stop: (signal: NodeJS.Signals) => Promise<void>, log: (message: string) => void = () => {}): void {
  let stoppingSince = 0;
  const handle = (signal: NodeJS.Signals) => {
    if (stoppingSince > 0) {
      // One Ctrl-C can arrive twice: from the terminal (to the whole process group) and forwarded
      // by a parent such as pnpm. A second press is a second signal a while later.
      if (Date.now() - stoppingSince < 1000) return;
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    stoppingSince = Date.now();
    stop(signal).then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${(error as Error)?.message ?? String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}

/**
 * Runs a process's main function: a configuration or start-up failure is printed as one line
 * (no stack: it is the operator's to fix, not a bug) and the process exits with 1.
 */
export function runMain(main: () => Promise<unknown>, name: string): void {
  main().catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${name}: ${message.split('\n')[0]}\n`);
    if (process.env.FANOUT_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  });
}
