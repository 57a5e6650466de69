// Where a run stands, for the progress bar of `rvma bench`: the command runs a benchmark as its
// child process and reads these messages from the IPC channel. Run any other way, nothing is sent.

export interface Progress {
  /** Measurements finished in this run of repeat(), of total. */
  done: number;
  total: number;
  /** 1-based. */
  repetition: number;
  repetitions: number;
  scenario: string;
  row: string;
}

export interface ProgressMessage {
  rvmaProgress: Progress;
}

export function isProgressMessage(message: unknown): message is ProgressMessage {
  return typeof message === 'object' && message !== null && 'rvmaProgress' in message;
}

export function reportProgress(progress: Progress): void {
  if (process.send && process.env.RVMA_BENCH_PROGRESS === '1') process.send({ rvmaProgress: progress } satisfies ProgressMessage);
}
