// What a child process uses, read from /proc by the test: the child may have no descriptor
// left to look at itself.
import * as fs from 'node:fs';
import { type Agent } from './children';

export interface Usage {
  cpuMs: number;
  rssBytes: number;
  fds: number;
}

export function usage(agent: Agent): Usage {
  const pid = agent.child.pid;
  // /proc/PID/stat: utime and stime are fields 14 and 15, in clock ticks (100 per second here).
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return {
    cpuMs: (Number(fields[11]) + Number(fields[12])) * 10,
    rssBytes: rssKb * 1024,
    fds: fs.readdirSync(`/proc/${pid}/fd`).length,
  };
}

/**
 * Expects `agent`, whose listener has more connections waiting than it has descriptors left
 * (`limit` in all), to sit at that limit without spinning: a spinning accept loop burns a
 * whole 2 s window on one CPU, a resting one hardly runs. A bound on a busy loop, not a timing.
 */
export async function expectRestingAtLimit(agent: Agent, limit: number): Promise<void> {
  await new Promise((r) => setTimeout(r, 300)); // the last connections reach the listener
  const start = usage(agent);
  expect(start.fds).toBeGreaterThanOrEqual(limit - 1);
  const windowMs = 2000;
  await new Promise((r) => setTimeout(r, windowMs));
  expect(usage(agent).cpuMs - start.cpuMs).toBeLessThan(windowMs / 2);
}
